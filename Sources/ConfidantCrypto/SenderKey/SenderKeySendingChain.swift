import Crypto
import Foundation

/// This device's sending chain for one group (docs/PROTOCOL.md §10.4): a symmetric ratchet (the
/// Double Ratchet's KDF_CK) and an Ed25519 key that signs each message. A new chain is made when
/// a member leaves or is removed, so what follows opens only for the members that remain.
///
/// Stored (secret): `u8 version = 1 | 16 group id | 16 chain id | u32 iteration | 32 chain key |
/// 32 Ed25519 private key`.
public struct SenderKeySendingChain: Sendable {
    /// The group the chain sends to.
    public let groupID: UUID
    /// The chain's random id, which each of its messages names.
    public let chainID: UUID
    /// The number of the next message this chain seals.
    public private(set) var iteration: UInt32
    private var chainKey: ChainKey
    private let signingKey: Curve25519.Signing.PrivateKey

    /// A fresh chain with random keys.
    public init(groupID: UUID) {
        self.init(
            groupID: groupID, chainID: UUID(), iteration: 0,
            chainKey: ChainKey(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }),
            signingKey: Curve25519.Signing.PrivateKey())
    }

    /// A chain from fixed keys, for known-answer tests.
    package init(
        groupID: UUID, chainID: UUID, iteration: UInt32, chainKey: [UInt8], signingKey: Curve25519.Signing.PrivateKey
    ) {
        self.init(
            groupID: groupID, chainID: chainID, iteration: iteration, chainKey: ChainKey(chainKey),
            signingKey: signingKey)
    }

    init(groupID: UUID, chainID: UUID, iteration: UInt32, chainKey: ChainKey, signingKey: Curve25519.Signing.PrivateKey)
    {
        self.groupID = groupID
        self.chainID = chainID
        self.iteration = iteration
        self.chainKey = chainKey
        self.signingKey = signingKey
    }

    /// What the other member devices need to open this chain's messages from now on.
    public var distribution: SenderKeyDistribution {
        SenderKeyDistribution(
            groupID: groupID, chainID: chainID, iteration: iteration, chainKey: chainKey,
            signingKey: signingKey.publicKey)
    }

    /// Seals `plaintext` as the chain's next message and steps the chain; store the chain before
    /// the message leaves, so that no key seals twice.
    public mutating func seal(_ plaintext: some DataProtocol) throws(SenderKeyError) -> SenderKeyMessage {
        guard plaintext.count <= SenderKeyMessage.maximumPlaintextBytes else { throw .tooLarge(plaintext.count) }
        guard iteration < UInt32.max else { throw .chainExhausted }
        let (messageKey, next) = chainKey.step()
        let (key, nonce) = try SenderMessageKey(bytes: messageKey.bytes).cipherKeys()
        let padded = Padme.pad(Array(plaintext))
        let header = SenderKeyMessage.header(chainID: chainID, iteration: iteration, ciphertextCount: padded.count + 16)
        let ciphertext: [UInt8]
        let signature: [UInt8]
        do {
            let box = try AES.GCM.seal(padded, using: key, nonce: nonce, authenticating: header)
            ciphertext = Array(box.ciphertext) + Array(box.tag)
            signature = Array(try signingKey.signature(for: SenderKeyMessage.signatureContext + header + ciphertext))
        } catch {
            throw .malformed("sealing failed: \(error)")
        }
        let message = SenderKeyMessage(
            chainID: chainID, iteration: iteration, ciphertext: ciphertext, signature: signature)
        chainKey = next
        iteration += 1
        return message
    }

    /// The chain as stored at rest (secret; the client seals it, §8).
    public var serialized: Data {
        Data(
            SenderChainFields(
                groupID: groupID, chainID: chainID, iteration: iteration, chainKey: chainKey,
                key: signingKey.rawRepresentation
            ).bytes)
    }

    /// Reads a stored chain.
    public init(serialized data: some DataProtocol) throws(SenderKeyError) {
        guard data.count == SenderChainFields.count else {
            throw .malformed("a stored sending chain of \(data.count) bytes")
        }
        var reader = ByteReader(data, truncated: SenderKeyError.malformed("truncated sending chain"))
        let fields = try SenderChainFields(&reader)
        guard let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: fields.key) else {
            throw .malformed("the signing key is not an Ed25519 private key")
        }
        self.init(
            groupID: fields.groupID, chainID: fields.chainID, iteration: fields.iteration, chainKey: fields.chainKey,
            signingKey: key)
    }
}
