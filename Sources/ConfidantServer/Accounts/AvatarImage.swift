import Crypto
import Foundation

/// A profile picture: a PNG or JPEG judged by its bytes, not by what the client says it is.
struct AvatarImage: Sendable {
    static let png = "image/png", jpeg = "image/jpeg"

    let bytes: Data
    /// `image/png` or `image/jpeg`.
    let type: String

    init(bytes: Data, type: String) {
        self.bytes = bytes
        self.type = type
    }

    /// What clients cache a picture by: SHA-256 of its bytes, hex.
    static func digest(of bytes: Data) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    init(checking bytes: Data, declared: String?, limit: Int) throws(APIFailure) {
        guard bytes.count <= limit else { throw APIFailure.tooLarge("The avatar", limit: limit) }
        let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        let type: String
        if bytes.count > 24, bytes.prefix(8).elementsEqual(pngSignature) {
            type = Self.png
        } else if bytes.count > 4, bytes.prefix(3).elementsEqual([0xFF, 0xD8, 0xFF]),
            bytes.suffix(2).elementsEqual([0xFF, 0xD9])
        {
            type = Self.jpeg
        } else {
            throw APIFailure(.unsupportedImage, "The avatar must be a PNG or JPEG image; these bytes are neither.")
        }
        if let declared, declared != type {
            throw APIFailure(.unsupportedImage, "The body is \(type) but was sent as \(declared).")
        }
        self.bytes = bytes
        self.type = type
    }
}
