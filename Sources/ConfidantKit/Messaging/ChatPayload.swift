import ConfidantCrypto
import Foundation

/// The plaintext inside a chat envelope (docs/PROTOCOL.md §8).
///
/// ```
/// u8 version = 1 | u8 kind (1 = text) | 16 bytes conversation user id | UTF-8 text
/// ```
/// The conversation id is the user the message was written to, so the sender's own other
/// devices, which see only "from me to this device", know which conversation it belongs to.
public struct ChatPayload: Sendable, Hashable {
    /// The payload format version.
    public static let version: UInt8 = 1
    /// The kind byte of a text message.
    public static let textKind: UInt8 = 1
    /// The largest text that still fits one 64 KiB envelope after padding and overhead.
    public static let maximumTextBytes = 61_440

    /// The user the message was written to: the peer, as the sender's own devices see it too.
    public let conversation: UUID
    /// The message text.
    public let text: String

    /// A text message to `conversation`.
    public init(conversation: UUID, text: String) {
        self.conversation = conversation
        self.text = text
    }

    /// The bytes that are sealed.
    public var serialized: Data {
        var bytes = Data([Self.version, Self.textKind])
        bytes += withUnsafeBytes(of: conversation.uuid) { Data($0) }
        bytes += Data(text.utf8)
        return bytes
    }

    /// Reads an opened envelope's plaintext.
    public init(serialized data: Data) throws(ChatPayloadError) {
        let bytes = [UInt8](data)
        guard bytes.count >= 18 else { throw .truncated }
        guard bytes[0] == Self.version else { throw .unsupportedVersion(bytes[0]) }
        guard bytes[1] == Self.textKind else { throw .unsupportedKind(bytes[1]) }
        let id = bytes[2..<18]
        conversation = id.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        guard let text = String(validating: bytes[18...], as: UTF8.self) else { throw .invalidText }
        self.text = text
    }
}

/// Why a payload could not be read.
public enum ChatPayloadError: Error, Equatable, CustomStringConvertible {
    case truncated
    case unsupportedVersion(UInt8)
    case unsupportedKind(UInt8)
    case invalidText

    public var description: String {
        switch self {
        case .truncated: return "the message is shorter than its header"
        case .unsupportedVersion(let v): return "message format version \(v) is newer than this app"
        case .unsupportedKind(let k): return "message kind \(k) is not supported by this app"
        case .invalidText: return "the message text is not valid UTF-8"
        }
    }
}
