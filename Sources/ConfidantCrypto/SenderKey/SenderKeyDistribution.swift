import Crypto
import Foundation

/// What a member device sends each other member device over their pairwise session so that they
/// can open its group messages from this point on (docs/PROTOCOL.md §10.4).
///
/// ```
/// u8 version = 1 | 16 group id | 16 chain id | u32 iteration | 32 chain key | 32 Ed25519 public key
/// ```
/// The chain key is the one for `iteration`: a receiver can derive every later message key and
/// none before, so a member added later cannot open what was sent before it got the distribution.
public struct SenderKeyDistribution: Sendable {
    /// The distribution format version.
    public static let version: UInt8 = SenderChainFields.version
    /// The exact size of a serialized distribution.
    public static let serializedCount = SenderChainFields.count

    /// The group the chain sends to.
    public let groupID: UUID
    /// The chain's random id, which each of its messages names.
    public let chainID: UUID
    /// The number of the next message the chain seals.
    public let iteration: UInt32
    let chainKey: ChainKey
    /// The key that signs every message of the chain.
    public let signingKey: Curve25519.Signing.PublicKey

    init(groupID: UUID, chainID: UUID, iteration: UInt32, chainKey: ChainKey, signingKey: Curve25519.Signing.PublicKey)
    {
        self.groupID = groupID
        self.chainID = chainID
        self.iteration = iteration
        self.chainKey = chainKey
        self.signingKey = signingKey
    }

    /// The bytes sent over the pairwise session (secret: they open the chain's messages).
    public var serialized: Data {
        Data(
            SenderChainFields(
                groupID: groupID, chainID: chainID, iteration: iteration, chainKey: chainKey,
                key: signingKey.rawRepresentation
            ).bytes)
    }

    /// Reads a distribution received over a pairwise session.
    public init(serialized data: some DataProtocol) throws(SenderKeyError) {
        guard data.count == Self.serializedCount else {
            throw .malformed("a distribution is \(Self.serializedCount) bytes, not \(data.count)")
        }
        var reader = ByteReader(data, truncated: SenderKeyError.malformed("truncated distribution"))
        let fields = try SenderChainFields(&reader)
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: fields.key) else {
            throw .malformed("the signing key is not an Ed25519 public key")
        }
        self.init(
            groupID: fields.groupID, chainID: fields.chainID, iteration: fields.iteration, chainKey: fields.chainKey,
            signingKey: key)
    }
}

extension SenderKeyDistribution: Hashable {
    /// Equal when their bytes are (the key types have no equality of their own).
    public static func == (lhs: SenderKeyDistribution, rhs: SenderKeyDistribution) -> Bool {
        lhs.serialized == rhs.serialized
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(serialized)
    }
}
