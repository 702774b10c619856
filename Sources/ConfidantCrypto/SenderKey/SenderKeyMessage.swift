import Crypto
import Foundation

/// One group message, sealed once with the sender's chain and signed with its key
/// (docs/PROTOCOL.md §10.4).
///
/// ```
/// u8 version = 1 | 16 chain id | u32 iteration | u32 ciphertext length
/// | AES-256-GCM(Padmé-padded plaintext) ‖ 16-byte tag | 64 Ed25519 signature
/// ```
/// AEAD associated data: the 25 bytes before the ciphertext. The signature covers
/// `"Confidant sender key v1\0"` and every byte before it. Nothing in clear names the group or the
/// sender: a receiver finds the chain by its random id.
public struct SenderKeyMessage: Sendable, Hashable {
    /// The group message format version.
    public static let version: UInt8 = 1
    /// The most plaintext bytes one message carries: a chat payload (§8) and room to spare.
    public static let maximumPlaintextBytes = 63_000
    static let headerCount = 1 + 16 + 4 + 4
    static let signatureCount = 64
    static let signatureContext = Array("Confidant sender key v1\u{0}".utf8)

    /// The sending chain's id.
    public let chainID: UUID
    /// The message's number in its chain.
    public let iteration: UInt32
    /// The AES-256-GCM ciphertext and its tag.
    let ciphertext: [UInt8]
    /// The chain key's Ed25519 signature.
    let signature: [UInt8]

    init(chainID: UUID, iteration: UInt32, ciphertext: [UInt8], signature: [UInt8]) {
        self.chainID = chainID
        self.iteration = iteration
        self.ciphertext = ciphertext
        self.signature = signature
    }

    /// The header: the associated data of the ciphertext.
    static func header(chainID: UUID, iteration: UInt32, ciphertextCount: Int) -> [UInt8] {
        var out: [UInt8] = [version]
        out.append(chainID)
        out.appendBigEndian(iteration)
        out.appendBigEndian(UInt32(ciphertextCount))
        return out
    }

    /// Everything but the signature.
    var signedPart: [UInt8] {
        Self.header(chainID: chainID, iteration: iteration, ciphertextCount: ciphertext.count) + ciphertext
    }

    /// The bytes a sender uploads once for every member device.
    public var serialized: Data { Data(signedPart + signature) }

    /// Reads a received group message; ``SenderKeyReceivingChain/open(_:)`` checks it.
    public init(serialized data: some DataProtocol) throws(SenderKeyError) {
        var reader = ByteReader(data, truncated: SenderKeyError.malformed("truncated group message"))
        let version = try reader.readUInt8()
        guard version == Self.version else { throw .unsupportedVersion(version) }
        chainID = try reader.readUUID()
        iteration = try reader.readUInt32()
        let length = Int(try reader.readUInt32())
        guard length >= 16, length <= Padme.paddedLength(4 + Self.maximumPlaintextBytes) + 16 else {
            throw .malformed("a ciphertext of \(length) bytes")
        }
        guard reader.remaining == length + Self.signatureCount else {
            throw .malformed("the ciphertext length does not match the message")
        }
        ciphertext = try reader.read(length)
        signature = try reader.read(Self.signatureCount)
    }
}

/// One message's key from a sender chain: HKDF-SHA256 (no salt, info
/// `"Confidant sender key message v1"`) to the AES-256 key and the 96-bit nonce.
struct SenderMessageKey: Sendable, Hashable {
    let bytes: [UInt8]

    static let info = Array("Confidant sender key message v1".utf8)

    func cipherKeys() throws(SenderKeyError) -> (key: SymmetricKey, nonce: AES.GCM.Nonce) {
        let out = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: bytes), info: Self.info, outputByteCount: 44
        ).withUnsafeBytes { Array($0) }
        do {
            return (SymmetricKey(data: out[0..<32]), try AES.GCM.Nonce(data: out[32..<44]))
        } catch {
            throw .malformed("nonce")
        }
    }
}
