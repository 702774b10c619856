import Crypto
import Foundation

/// Another member device's chain as this device holds it (docs/PROTOCOL.md §10.4): the chain key
/// for the next expected message, and the keys of skipped ones, so messages may arrive out of
/// order but each opens once.
///
/// Stored (secret): `u8 version = 1 | 16 group id | 16 chain id | u32 next iteration | 32 chain
/// key | 32 Ed25519 public key | u16 n | n × (u32 iteration | 32 message key)`.
public struct SenderKeyReceivingChain: Sendable {
    /// The most messages one message may skip (their keys are derived and kept).
    public static let maximumSkip = 2_000
    /// The most skipped keys kept; the oldest go first.
    public static let maximumKeptKeys = 2_000

    /// The group the chain sends to.
    public let groupID: UUID
    /// The chain's random id, which each of its messages names.
    public let chainID: UUID
    /// The iteration of the next message after those opened or skipped.
    public private(set) var nextIteration: UInt32
    private var chainKey: ChainKey
    /// The key that signs every message of the chain.
    public let signingKey: Curve25519.Signing.PublicKey
    /// Keys of skipped messages, oldest first.
    private var skipped: [(iteration: UInt32, key: [UInt8])]

    /// Starts following a chain from a distribution received over a pairwise session.
    public init(_ distribution: SenderKeyDistribution) {
        groupID = distribution.groupID
        chainID = distribution.chainID
        nextIteration = distribution.iteration
        chainKey = distribution.chainKey
        signingKey = distribution.signingKey
        skipped = []
    }

    /// Checks the signature, then opens the message; the chain changes only if it opens.
    public mutating func open(_ message: SenderKeyMessage) throws(SenderKeyError) -> Data {
        guard message.chainID == chainID else { throw .wrongChain }
        guard
            signingKey.isValidSignature(
                message.signature, for: SenderKeyMessage.signatureContext + message.signedPart)
        else { throw .badSignature }
        var copy = self
        let messageKey = try copy.takeKey(for: message.iteration)
        let (key, nonce) = try SenderMessageKey(bytes: messageKey).cipherKeys()
        let header = SenderKeyMessage.header(
            chainID: chainID, iteration: message.iteration, ciphertextCount: message.ciphertext.count)
        let padded: Data
        do {
            let body = message.ciphertext.dropLast(16)
            let tag = message.ciphertext.suffix(16)
            let box = try AES.GCM.SealedBox(nonce: nonce, ciphertext: body, tag: tag)
            padded = try AES.GCM.open(box, using: key, authenticating: header)
        } catch {
            throw .tampered
        }
        guard let plaintext = Padme.unpad(padded) else { throw .tampered }
        self = copy
        return Data(plaintext)
    }

    /// The message key for `iteration`: a kept skipped key, or the chain stepped to it.
    private mutating func takeKey(for iteration: UInt32) throws(SenderKeyError) -> [UInt8] {
        if iteration < nextIteration {
            guard let index = skipped.firstIndex(where: { $0.iteration == iteration }) else { throw .duplicate }
            return skipped.remove(at: index).key
        }
        let gap = Int(iteration - nextIteration)
        guard gap <= Self.maximumSkip else { throw .tooManySkipped(gap) }
        while nextIteration < iteration {
            let (messageKey, next) = chainKey.step()
            skipped.append((nextIteration, messageKey.bytes))
            chainKey = next
            nextIteration += 1
        }
        if skipped.count > Self.maximumKeptKeys { skipped.removeFirst(skipped.count - Self.maximumKeptKeys) }
        let (messageKey, next) = chainKey.step()
        chainKey = next
        // The last iteration is never sealed (the sender stops at UInt32.max), so this cannot wrap.
        nextIteration = iteration &+ 1
        return messageKey.bytes
    }

    /// The chain as stored at rest (secret; the client seals it, §8).
    public var serialized: Data {
        var out = SenderChainFields(
            groupID: groupID, chainID: chainID, iteration: nextIteration, chainKey: chainKey,
            key: signingKey.rawRepresentation
        ).bytes
        out.appendBigEndian(UInt16(skipped.count))
        for entry in skipped {
            out.appendBigEndian(entry.iteration)
            out += entry.key
        }
        return Data(out)
    }

    /// Reads a stored chain.
    public init(serialized data: some DataProtocol) throws(SenderKeyError) {
        var reader = ByteReader(data, truncated: SenderKeyError.malformed("truncated receiving chain"))
        let fields = try SenderChainFields(&reader)
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: fields.key) else {
            throw .malformed("the signing key is not an Ed25519 public key")
        }
        groupID = fields.groupID
        chainID = fields.chainID
        nextIteration = fields.iteration
        chainKey = fields.chainKey
        signingKey = key
        let count = Int(try reader.readUInt16())
        guard count <= Self.maximumKeptKeys else { throw .malformed("\(count) skipped keys") }
        var kept: [(iteration: UInt32, key: [UInt8])] = []
        kept.reserveCapacity(count)
        for _ in 0..<count {
            let iteration = try reader.readUInt32()
            guard iteration < nextIteration else { throw .malformed("a skipped key after the chain's position") }
            kept.append((iteration, try reader.read(32)))
        }
        guard reader.isAtEnd else { throw .malformed("bytes after the receiving chain") }
        skipped = kept
    }
}
