import Crypto
import Foundation

/// One Double Ratchet session with one peer device (Signal's specification, revision 4), started
/// by a PQXDH-style handshake that mixes three or four X25519 outputs with an X-Wing shared secret.
///
/// A session is a value: opening a message works on a copy and keeps it only when the message
/// authenticates, so a forged or replayed envelope never changes the state (as the specification asks).
/// Persist ``serialized`` only encrypted, and erase the old bytes: they can open messages the
/// new state no longer can.
public struct RatchetSession: Sendable {
    /// The most message keys a session keeps for messages that have not arrived yet, and the
    /// largest gap one message may open.
    public static let maximumSkip = 1000
    /// How many earlier receiving chains are remembered to recognise replays from them.
    static let retiredChainLimit = 32
    /// How many message numbers a seal reserves ahead on its sending chain when it uses one that
    /// was not reserved (``sealsWithinReservation``). A state read back after its latest writes
    /// may have been lost goes on from its reservation (``skipToReservation()``), so the peer
    /// skips at most this many numbers for it. Each new reservation is a synced commit before
    /// the envelope leaves, so one message in this many waits for the disk. Well within
    /// ``maximumSkip``: a peer keeps the skipped keys of three such restarts in a row.
    public static let sendingReservation: UInt32 = 256

    static let handshakeInfo = Array("Confidant PQXDH v1 X25519 X-Wing SHA-256".utf8)
    static let bindingContext = Array("Confidant session v1\u{0}".utf8)

    struct SkippedKey: Hashable {
        let ratchetKey: [UInt8]
        let number: UInt32
    }

    /// SHA-256 over both identities, initiator first: part of every message's associated data.
    let associatedData: [UInt8]
    /// The initiator's base key: names the session in start messages.
    let baseKey: [UInt8]
    // Set only here and by the stored form's reader (RatchetSession+Serialization.swift).
    var rootKey: RootKey
    var sendingRatchetKey: Curve25519.KeyAgreement.PrivateKey {
        // Kept beside the key: deriving it is a scalar multiplication, a third of a message's cost.
        didSet { sendingRatchetPublicKey = sendingRatchetKey.publicKey.rawRepresentation }
    }
    var sendingRatchetPublicKey: Data
    var remoteRatchetKey: [UInt8]?
    var sendingChain: ChainKey?
    var receivingChain: ChainKey?
    var sendCount: UInt32 = 0
    /// The first message number of the sending chain not reserved: below it, a number may be
    /// used before the state that used it is on disk (``sealsWithinReservation``).
    var sendReserve: UInt32 = 0
    var previousSendCount: UInt32 = 0
    var receiveCount: UInt32 = 0
    /// Keys of messages skipped over, for when they arrive, and the order they were skipped in.
    var skipped: [SkippedKey: MessageKey] = [:]
    var skippedOrder: [SkippedKey] = []
    /// Receiving ratchet keys of earlier chains, to recognise replays from them.
    var retiredChains: [[UInt8]] = []
    /// Sent with every message until the peer answers.
    var pendingStart: SessionStart?

    init(
        associatedData: [UInt8], baseKey: [UInt8], rootKey: RootKey,
        sendingRatchetKey: Curve25519.KeyAgreement.PrivateKey,
        remoteRatchetKey: [UInt8]?, sendingChain: ChainKey?, pendingStart: SessionStart?
    ) {
        self.associatedData = associatedData
        self.baseKey = baseKey
        self.rootKey = rootKey
        self.sendingRatchetKey = sendingRatchetKey
        self.sendingRatchetPublicKey = sendingRatchetKey.publicKey.rawRepresentation
        self.remoteRatchetKey = remoteRatchetKey
        self.sendingChain = sendingChain
        self.pendingStart = pendingStart
    }

    /// True once this side can seal (always for an initiator; for a responder after the first message).
    public var canSeal: Bool { sendingChain != nil }
    /// True while messages still carry the session start (the peer has not answered yet).
    public var isAwaitingReply: Bool { pendingStart != nil }
    /// How many message keys are held for messages that have not arrived.
    public var skippedKeyCount: Int { skipped.count }

    /// Whether the next seal uses a message number this state had reserved: the state stored
    /// before it holds the reservation (a seal that reserved, or the DH ratchet step that
    /// started the chain; the caller puts it on disk before the envelope leaves), so the
    /// envelope may leave before the state the seal leaves is on disk. When false, the seal
    /// reserves ``sendingReservation`` numbers from its own, and what it leaves must be on disk
    /// before the envelope goes.
    public var sealsWithinReservation: Bool { sendingChain != nil && sendCount < sendReserve }

    /// Moves the sending chain on to its reservation, for a state read back after its latest
    /// writes may have been lost (a power cut or a crash of the system after writes that were not
    /// synced): the numbers it may have used since are never used again. The peer skips the
    /// numbers between (at most ``sendingReservation``).
    public mutating func skipToReservation() {
        guard var chain = sendingChain, sendCount < sendReserve else { return }
        while sendCount < sendReserve {
            chain = chain.step().next
            sendCount += 1
        }
        sendingChain = chain
    }

    // MARK: Seal and open

    /// Seals one message in this session and advances the sending chain.
    mutating func seal(
        _ message: some DataProtocol, sender: DeviceAddress, recipient: DeviceAddress, messageID: UUID,
        timestampMilliseconds: UInt64
    ) throws(SessionError) -> RatchetEnvelope {
        guard let chain = sendingChain else { throw SessionError.noSession }
        guard sendCount < UInt32.max else { throw SessionError.malformed("the sending chain is exhausted") }
        let (messageKey, next) = chain.step()
        // A number beyond the reservation reserves the next ones, stored with this state.
        let reserve =
            sendCount < sendReserve
            ? sendReserve : UInt32(min(UInt64(sendCount) + UInt64(Self.sendingReservation), UInt64(UInt32.max)))
        let unsealed = RatchetEnvelope(
            sender: sender, recipient: recipient, messageID: messageID, timestampMilliseconds: timestampMilliseconds,
            start: pendingStart, ratchetKey: sendingRatchetPublicKey,
            previousChainLength: previousSendCount, messageNumber: sendCount, ciphertext: Data())
        let sealed: AES.GCM.SealedBox
        do {
            let (key, nonce) = try messageKey.cipherKeys()
            sealed = try AES.GCM.seal(
                Padme.pad(Array(message)), using: key, nonce: nonce,
                authenticating: associatedData + unsealed.authenticatedPrefix)
        } catch {
            throw SessionError.invalidKey("\(error)")
        }
        sendingChain = next
        sendCount += 1
        sendReserve = reserve  // ≥ sendCount: the reservation held it, or it is `sendingReservation` past the old count
        return RatchetEnvelope(
            sender: sender, recipient: recipient, messageID: messageID, timestampMilliseconds: timestampMilliseconds,
            start: unsealed.start, ratchetKey: unsealed.ratchetKey, previousChainLength: unsealed.previousChainLength,
            messageNumber: unsealed.messageNumber, ciphertext: sealed.ciphertext + sealed.tag)
    }

    /// Opens one message; the state changes only if it authenticates.
    /// - Returns: the message (padding removed).
    mutating func open(_ envelope: RatchetEnvelope, entropy: SessionEntropy = .system) throws(SessionError) -> [UInt8] {
        var state = self
        let message = try state.openInPlace(envelope, entropy: entropy)
        self = state
        return message
    }

    private mutating func openInPlace(_ envelope: RatchetEnvelope, entropy: SessionEntropy) throws(SessionError)
        -> [UInt8]
    {
        let aad = associatedData + envelope.authenticatedPrefix
        let remote = Array(envelope.ratchetKey)
        let skippedKey = SkippedKey(ratchetKey: remote, number: envelope.messageNumber)
        if let messageKey = skipped[skippedKey] {
            let message = try Self.decrypt(envelope.ciphertext, messageKey: messageKey, aad: aad)
            skipped[skippedKey] = nil
            skippedOrder.removeAll { $0 == skippedKey }
            pendingStart = nil
            return message
        }
        if remote == remoteRatchetKey, receivingChain != nil {
            guard envelope.messageNumber >= receiveCount else { throw SessionError.duplicate }
        } else {
            guard !retiredChains.contains(remote) else { throw SessionError.duplicate }
            try skipMessageKeys(until: envelope.previousChainLength)
            try ratchetStep(to: remote, entropy: entropy)
        }
        try skipMessageKeys(until: envelope.messageNumber)
        guard let chain = receivingChain else { throw SessionError.noSession }
        let (messageKey, next) = chain.step()
        receivingChain = next
        receiveCount += 1
        let message = try Self.decrypt(envelope.ciphertext, messageKey: messageKey, aad: aad)
        pendingStart = nil
        return message
    }

    private mutating func skipMessageKeys(until end: UInt32) throws(SessionError) {
        guard var chain = receivingChain, let remote = remoteRatchetKey, end > receiveCount else { return }
        let gap = Int(end) - Int(receiveCount)
        guard gap <= Self.maximumSkip else { throw SessionError.tooManySkipped(gap) }
        while receiveCount < end {
            let (messageKey, next) = chain.step()
            let key = SkippedKey(ratchetKey: remote, number: receiveCount)
            skipped[key] = messageKey
            skippedOrder.append(key)
            chain = next
            receiveCount += 1
        }
        receivingChain = chain
        // The oldest keys go first when the store is full.
        if skippedOrder.count > Self.maximumSkip {
            for key in skippedOrder.prefix(skippedOrder.count - Self.maximumSkip) { skipped[key] = nil }
            skippedOrder.removeFirst(skippedOrder.count - Self.maximumSkip)
        }
    }

    private mutating func ratchetStep(to remote: [UInt8], entropy: SessionEntropy) throws(SessionError) {
        if let old = remoteRatchetKey, receivingChain != nil {
            retiredChains.append(old)
            if retiredChains.count > Self.retiredChainLimit { retiredChains.removeFirst() }
        }
        do {
            let remoteKey = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: remote)
            previousSendCount = sendCount
            sendCount = 0
            // A new chain is born with its first reservation: whatever puts this step on disk puts
            // the reservation there with it. The step must be on disk before anything sealed on
            // the chain leaves: made again from another key after a power cut, it would part this
            // side from a peer that read such an envelope (`SessionRecord.newReservation(beyond:)`
            // says so to the store; docs/PROTOCOL.md §9.6).
            sendReserve = Self.sendingReservation
            receiveCount = 0
            remoteRatchetKey = remote
            (rootKey, receivingChain) = rootKey.advanced(by: try Self.dh(sendingRatchetKey, remoteKey))
            sendingRatchetKey = try entropy.newKey()
            (rootKey, sendingChain) = rootKey.advanced(by: try Self.dh(sendingRatchetKey, remoteKey))
        } catch {
            throw SessionError.tampered
        }
    }

    // MARK: Primitives

    static func dh(_ privateKey: Curve25519.KeyAgreement.PrivateKey, _ publicKey: Curve25519.KeyAgreement.PublicKey)
        throws -> [UInt8]
    {
        try privateKey.sharedSecretFromKeyAgreement(with: publicKey).withUnsafeBytes { Array($0) }
    }

    static func decrypt(_ ciphertext: Data, messageKey: MessageKey, aad: [UInt8]) throws(SessionError) -> [UInt8] {
        guard ciphertext.count >= 16 else { throw SessionError.tampered }
        let padded: Data
        do {
            let (key, nonce) = try messageKey.cipherKeys()
            let box = try AES.GCM.SealedBox(
                nonce: nonce, ciphertext: ciphertext.dropLast(16), tag: ciphertext.suffix(16))
            padded = try AES.GCM.open(box, using: key, authenticating: aad)
        } catch {
            throw SessionError.tampered
        }
        guard let message = Padme.unpad(padded) else {
            throw SessionError.malformed("bad padding inside an authentic message")
        }
        return message
    }
}
