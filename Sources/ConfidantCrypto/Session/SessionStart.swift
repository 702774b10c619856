import Foundation

/// The fields a v2 envelope carries until its initiator hears back: enough for the responder to
/// rebuild the session key from its prekeys.
///
/// `32 initiator base key (X25519) | u32 signed prekey id | u32 X-Wing prekey id | u32 one-time prekey id (0 = none) | 1120 X-Wing ciphertext`
public struct SessionStart: Sendable, Hashable {
    /// The serialized size in bytes.
    public static let byteCount = 32 + 4 + 4 + 4 + 1120

    /// The initiator's ephemeral X25519 public key; it also names the session.
    public let baseKey: Data
    /// The id of the responder's signed X25519 prekey the start used.
    public let signedPrekeyID: UInt32
    /// The id of the responder's signed X-Wing prekey the start encapsulated to.
    public let kemPrekeyID: UInt32
    /// The id of the responder's one-time prekey the start used, if one was left.
    public let oneTimePrekeyID: UInt32?
    /// The X-Wing ciphertext (1,120 bytes) of the shared secret.
    public let kemCiphertext: Data

    init(baseKey: Data, signedPrekeyID: UInt32, kemPrekeyID: UInt32, oneTimePrekeyID: UInt32?, kemCiphertext: Data) {
        self.baseKey = baseKey
        self.signedPrekeyID = signedPrekeyID
        self.kemPrekeyID = kemPrekeyID
        self.oneTimePrekeyID = oneTimePrekeyID
        self.kemCiphertext = kemCiphertext
    }

    func write(to out: inout [UInt8]) {
        out += baseKey
        out.appendBigEndian(signedPrekeyID)
        out.appendBigEndian(kemPrekeyID)
        out.appendBigEndian(oneTimePrekeyID ?? 0)
        out += kemCiphertext
    }

    init(reading reader: inout ByteReader<TruncatedBytes>) throws(TruncatedBytes) {
        baseKey = try reader.readData(32)
        signedPrekeyID = try reader.readUInt32()
        kemPrekeyID = try reader.readUInt32()
        let oneTime = try reader.readUInt32()
        oneTimePrekeyID = oneTime == 0 ? nil : oneTime
        kemCiphertext = try reader.readData(1120)
    }
}
