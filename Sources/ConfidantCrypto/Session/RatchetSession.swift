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
    /// the envelope leaves, which holds up the sender's event loop for the sync: 16 at a time
    /// made one message in 16 wait for the disk (with one message in flight, most of the
    /// sender's `fdatasync` calls), 64 one in 64 (docs/BENCHMARKS.md). Well within
    /// ``maximumSkip``: a peer keeps the skipped keys of three such restarts in a row.
    public static let sendingReservation: UInt32 = 256

    static let handshakeInfo = Array("Confidant PQXDH v1 X25519 X-Wing SHA-256".utf8)
    static let rootInfo = Array("Confidant ratchet root v1".utf8)
    static let messageInfo = Array("Confidant ratchet message v1".utf8)
    static let bindingContext = Array("Confidant session v1\u{0}".utf8)

    struct SkippedKey: Hashable {
        let ratchetKey: [UInt8]
        let number: UInt32
    }

    /// SHA-256 over both identities, initiator first: part of every message's associated data.
    let associatedData: [UInt8]
    /// The initiator's base key: names the session in start messages.
    let baseKey: [UInt8]
    private(set) var rootKey: [UInt8]
    private(set) var sendingRatchetKey: Curve25519.KeyAgreement.PrivateKey {
        // Kept beside the key: deriving it is a scalar multiplication, a third of a message's cost.
        didSet { sendingRatchetPublicKey = sendingRatchetKey.publicKey.rawRepresentation }
    }
    private(set) var sendingRatchetPublicKey: Data
    private(set) var remoteRatchetKey: [UInt8]?
    private(set) var sendingChain: [UInt8]?
    private(set) var receivingChain: [UInt8]?
    private(set) var sendCount: UInt32 = 0
    /// The first message number of the sending chain not reserved: below it, a number may be
    /// used before the state that used it is on disk (``sealsWithinReservation``).
    private(set) var sendReserve: UInt32 = 0
    private(set) var previousSendCount: UInt32 = 0
    private(set) var receiveCount: UInt32 = 0
    private var skipped: [SkippedKey: [UInt8]] = [:]
    private var skippedOrder: [SkippedKey] = []
    private var retiredChains: [[UInt8]] = []
    /// Sent with every message until the peer answers.
    private(set) var pendingStart: SessionStart?

    private init(
        associatedData: [UInt8], baseKey: [UInt8], rootKey: [UInt8],
        sendingRatchetKey: Curve25519.KeyAgreement.PrivateKey,
        remoteRatchetKey: [UInt8]?, sendingChain: [UInt8]?, pendingStart: SessionStart?
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
            chain = Self.kdfChain(chain).next
            sendCount += 1
        }
        sendingChain = chain
    }

    // MARK: Handshake

    /// Starts a session as initiator from a peer device's verified prekey bundle.
    public static func initiate(
        from me: PrivateIdentity, to peer: PublicIdentity, bundle: PrekeyBundle,
        entropy: SessionEntropy = .system
    ) throws(SessionError) -> RatchetSession {
        try bundle.verify(for: peer)
        do {
            let signedPrekey = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: bundle.signedPrekey.publicKey)
            let kemPrekey = try XWingMLKEM768X25519.PublicKey(rawRepresentation: bundle.kemPrekey.publicKey)
            let oneTime = try bundle.oneTimePrekey.map {
                try Curve25519.KeyAgreement.PublicKey(rawRepresentation: $0.publicKey)
            }
            let base = try entropy.newKey()
            var secrets = [UInt8](repeating: 0xFF, count: 32)
            secrets += try dh(me.x25519Key, signedPrekey)
            secrets += try dh(base, peer.x25519Key)
            secrets += try dh(base, signedPrekey)
            if let oneTime { secrets += try dh(base, oneTime) }
            let encapsulation = try entropy.encapsulate(kemPrekey)
            secrets += encapsulation.sharedSecret
            let sessionKey = handshakeKey(secrets)
            let start = SessionStart(
                baseKey: base.publicKey.rawRepresentation, signedPrekeyID: bundle.signedPrekey.id,
                kemPrekeyID: bundle.kemPrekey.id, oneTimePrekeyID: bundle.oneTimePrekey?.id,
                kemCiphertext: encapsulation.ciphertext)
            let ratchet = try entropy.newKey()
            let (root, chain) = kdfRoot(sessionKey, try dh(ratchet, signedPrekey))
            return RatchetSession(
                associatedData: binding(initiator: me.publicIdentity, responder: peer), baseKey: Array(start.baseKey),
                rootKey: root, sendingRatchetKey: ratchet, remoteRatchetKey: Array(bundle.signedPrekey.publicKey),
                sendingChain: chain, pendingStart: start)
        } catch let error as SessionError {
            throw error
        } catch {
            throw SessionError.invalidKey("\(error)")
        }
    }

    /// Rebuilds the session a start message describes, as responder. Does not erase the one-time
    /// prekey: the caller does that once the first message opens.
    static func respond(
        to start: SessionStart, as me: PrivateIdentity, from peer: PublicIdentity,
        prekeys: DevicePrekeys
    ) throws(SessionError) -> RatchetSession {
        let signedPrekey = try prekeys.signedPrekey(start.signedPrekeyID)
        let kemPrekey = try prekeys.kemPrekey(start.kemPrekeyID)
        let oneTime = try start.oneTimePrekeyID.map { id throws(SessionError) in try prekeys.oneTimePrekey(id) }
        do {
            let base = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: start.baseKey)
            var secrets = [UInt8](repeating: 0xFF, count: 32)
            secrets += try dh(signedPrekey, peer.x25519Key)
            secrets += try dh(me.x25519Key, base)
            secrets += try dh(signedPrekey, base)
            if let oneTime { secrets += try dh(oneTime, base) }
            secrets += try kemPrekey.decapsulate(start.kemCiphertext).withUnsafeBytes { Array($0) }
            return RatchetSession(
                associatedData: binding(initiator: peer, responder: me.publicIdentity), baseKey: Array(start.baseKey),
                rootKey: handshakeKey(secrets), sendingRatchetKey: signedPrekey, remoteRatchetKey: nil,
                sendingChain: nil, pendingStart: nil)
        } catch {
            // An invalid base key or KEM ciphertext: the start was not made for these prekeys.
            throw SessionError.tampered
        }
    }

    /// Binds the identities' keys and device ids, not their signatures: Ed25519 signatures are
    /// randomised on Apple platforms, and the binding must not differ between the two ends.
    static func binding(initiator: PublicIdentity, responder: PublicIdentity) -> [UInt8] {
        var hash = SHA256()
        hash.update(data: bindingContext)
        hash.update(data: initiator.serialized.dropLast(64))
        hash.update(data: responder.serialized.dropLast(64))
        return Array(hash.finalize())
    }

    static func handshakeKey(_ secrets: [UInt8]) -> [UInt8] {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: secrets), salt: [UInt8](repeating: 0, count: 32),
            info: handshakeInfo, outputByteCount: 32
        ).withUnsafeBytes { Array($0) }
    }

    // MARK: Seal and open

    /// Seals one message in this session and advances the sending chain.
    mutating func seal(
        _ message: some DataProtocol, sender: DeviceAddress, recipient: DeviceAddress, messageID: UUID,
        timestampMilliseconds: UInt64
    ) throws(SessionError) -> RatchetEnvelope {
        guard let chain = sendingChain else { throw SessionError.noSession }
        guard sendCount < UInt32.max else { throw SessionError.malformed("the sending chain is exhausted") }
        let (messageKey, next) = Self.kdfChain(chain)
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
            let (key, nonce) = try Self.messageKeys(messageKey)
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
        let (messageKey, next) = Self.kdfChain(chain)
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
            let (messageKey, next) = Self.kdfChain(chain)
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
            (rootKey, receivingChain) = Self.kdfRoot(rootKey, try Self.dh(sendingRatchetKey, remoteKey))
            sendingRatchetKey = try entropy.newKey()
            (rootKey, sendingChain) = Self.kdfRoot(rootKey, try Self.dh(sendingRatchetKey, remoteKey))
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

    /// KDF_RK: HKDF-SHA256 with the root key as salt; 64 bytes → (root key, chain key).
    static func kdfRoot(_ rootKey: [UInt8], _ dhOutput: [UInt8]) -> ([UInt8], [UInt8]) {
        let out = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: dhOutput), salt: rootKey, info: rootInfo,
            outputByteCount: 64
        ).withUnsafeBytes { Array($0) }
        return (Array(out[0..<32]), Array(out[32..<64]))
    }

    /// KDF_CK: HMAC-SHA256(chain key, 0x01) is the message key, HMAC-SHA256(chain key, 0x02) the next chain key.
    /// The key is set up once for both (an `HMAC` is a value: each copy goes on from the keyed
    /// state): setting a key up costs more than the hashing that follows it.
    static func kdfChain(_ chainKey: [UInt8]) -> (messageKey: [UInt8], next: [UInt8]) {
        let keyed = HMAC<SHA256>(key: SymmetricKey(data: chainKey))
        var message = keyed
        message.update(data: byte1)
        var next = keyed
        next.update(data: byte2)
        return (Array(message.finalize()), Array(next.finalize()))
    }

    private static let byte1: [UInt8] = [0x01]
    private static let byte2: [UInt8] = [0x02]

    /// HKDF's extract without a salt: HMAC-SHA256 keyed with HashLen zero bytes (RFC 5869 §2.2),
    /// keyed once for every message.
    private static let unsaltedExtract = HMAC<SHA256>(key: SymmetricKey(data: [UInt8](repeating: 0, count: 32)))

    /// A message key expands (HKDF-SHA256, no salt, `messageInfo`) to an AES-256 key and a 96-bit
    /// nonce; each is used once. RFC 5869 written out — extract, then the two blocks of expand —
    /// so that each HMAC key is set up once: through `HKDF` it was five set-ups a message, and
    /// these key derivations were three quarters of sealing's CPU (perf, 2026-11-28). A test
    /// holds it equal to `HKDF<SHA256>.deriveKey`.
    static func messageKeys(_ messageKey: [UInt8]) throws -> (SymmetricKey, AES.GCM.Nonce) {
        var extract = unsaltedExtract
        extract.update(data: messageKey)
        let expand = HMAC<SHA256>(key: SymmetricKey(data: extract.finalize()))
        var first = expand  // T(1) = HMAC(PRK, info ‖ 0x01)
        first.update(data: messageInfo)
        first.update(data: byte1)
        let block1 = Array(first.finalize())
        var second = expand  // T(2) = HMAC(PRK, T(1) ‖ info ‖ 0x02); its first 12 bytes are the nonce
        second.update(data: block1)
        second.update(data: messageInfo)
        second.update(data: byte2)
        let block2 = Array(second.finalize())
        return (SymmetricKey(data: block1), try AES.GCM.Nonce(data: block2[0..<12]))
    }

    static func decrypt(_ ciphertext: Data, messageKey: [UInt8], aad: [UInt8]) throws(SessionError) -> [UInt8] {
        guard ciphertext.count >= 16 else { throw SessionError.tampered }
        let padded: Data
        do {
            let (key, nonce) = try messageKeys(messageKey)
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

    // MARK: Serialization

    /// Version 2 adds the sending reservation; version 1 (still read) reserved nothing.
    static let formatVersion: UInt8 = 2
    private static let hasRemote: UInt8 = 0x01, hasSending: UInt8 = 0x02, hasReceiving: UInt8 = 0x04,
        hasStart: UInt8 = 0x08

    /// Secret bytes (docs/PROTOCOL.md §9.5); store them only encrypted.
    public var serialized: Data {
        var flags: UInt8 = 0
        if remoteRatchetKey != nil { flags |= Self.hasRemote }
        if sendingChain != nil { flags |= Self.hasSending }
        if receivingChain != nil { flags |= Self.hasReceiving }
        if pendingStart != nil { flags |= Self.hasStart }
        var out: [UInt8] = [Self.formatVersion, flags]
        out += associatedData
        out += baseKey
        out += rootKey
        out += sendingRatchetKey.rawRepresentation
        out += remoteRatchetKey ?? []
        out += sendingChain ?? []
        out += receivingChain ?? []
        out.appendBigEndian(sendCount)
        out.appendBigEndian(previousSendCount)
        out.appendBigEndian(receiveCount)
        out.appendBigEndian(sendReserve)
        pendingStart?.write(to: &out)
        out.appendBigEndian(UInt16(skippedOrder.count))
        for key in skippedOrder {
            out += key.ratchetKey
            out.appendBigEndian(key.number)
            out += skipped[key] ?? []
        }
        out.append(UInt8(retiredChains.count))
        for key in retiredChains { out += key }
        return Data(out)
    }

    /// Reads the stored form (``serialized``) of one session.
    public init(serialized bytes: some DataProtocol) throws(SessionError) {
        var reader = ByteReader(bytes)
        do {
            let version = try reader.readUInt8()
            guard version == 1 || version == Self.formatVersion else {
                throw SessionError.malformed("unknown session format")
            }
            let flags = try reader.readUInt8()
            guard flags & ~(Self.hasRemote | Self.hasSending | Self.hasReceiving | Self.hasStart) == 0 else {
                throw SessionError.malformed("unknown session flags")
            }
            associatedData = try reader.read(32)
            baseKey = try reader.read(32)
            rootKey = try reader.read(32)
            sendingRatchetKey = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: reader.read(32))
            sendingRatchetPublicKey = sendingRatchetKey.publicKey.rawRepresentation
            remoteRatchetKey = flags & Self.hasRemote != 0 ? try reader.read(32) : nil
            sendingChain = flags & Self.hasSending != 0 ? try reader.read(32) : nil
            receivingChain = flags & Self.hasReceiving != 0 ? try reader.read(32) : nil
            sendCount = try reader.readUInt32()
            previousSendCount = try reader.readUInt32()
            receiveCount = try reader.readUInt32()
            sendReserve = try version == 1 ? sendCount : reader.readUInt32()
            guard sendReserve >= sendCount else {
                throw SessionError.malformed("the sending reservation is behind the sending chain")
            }
            pendingStart = flags & Self.hasStart != 0 ? try SessionStart(reading: &reader) : nil
            for _ in 0..<Int(try reader.readUInt16()) {
                let key = SkippedKey(ratchetKey: try reader.read(32), number: try reader.readUInt32())
                guard skipped.updateValue(try reader.read(32), forKey: key) == nil else {
                    throw SessionError.malformed("a skipped message key appears twice")
                }
                skippedOrder.append(key)
            }
            retiredChains = try (0..<Int(reader.readUInt8())).map { _ in try reader.read(32) }
        } catch let error as SessionError {
            throw error
        } catch {
            throw SessionError.malformed("the session is truncated or holds an invalid key")
        }
        guard reader.isAtEnd else {
            throw SessionError.malformed("\(reader.remaining) unexpected bytes after the session")
        }
    }
}
