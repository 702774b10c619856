import Foundation

/// The fields a distribution and both stored chains begin with (docs/PROTOCOL.md §10.4):
/// `u8 version = 1 | 16 group id | 16 chain id | u32 iteration | 32 chain key | 32 key`, the last
/// an Ed25519 public key (distribution, receiving chain) or private key (sending chain).
struct SenderChainFields {
    static let version: UInt8 = 1
    static let count = 1 + 16 + 16 + 4 + 32 + 32

    let groupID: UUID
    let chainID: UUID
    let iteration: UInt32
    let chainKey: ChainKey
    let key: [UInt8]

    init(groupID: UUID, chainID: UUID, iteration: UInt32, chainKey: ChainKey, key: some DataProtocol) {
        self.groupID = groupID
        self.chainID = chainID
        self.iteration = iteration
        self.chainKey = chainKey
        self.key = Array(key)
    }

    var bytes: [UInt8] {
        var out: [UInt8] = [Self.version]
        out.reserveCapacity(Self.count)
        out.append(groupID)
        out.append(chainID)
        out.appendBigEndian(iteration)
        out += chainKey.bytes
        out += key
        return out
    }

    /// Reads the fields.
    init(_ reader: inout ByteReader<SenderKeyError>) throws(SenderKeyError) {
        let version = try reader.readUInt8()
        guard version == Self.version else { throw .unsupportedVersion(version) }
        groupID = try reader.readUUID()
        chainID = try reader.readUUID()
        iteration = try reader.readUInt32()
        chainKey = ChainKey(try reader.read(32))
        key = try reader.read(32)
    }
}
