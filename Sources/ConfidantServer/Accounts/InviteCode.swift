import Crypto
import Foundation

/// An invite code as people type it: 20 characters of Crockford's base32 (100 random bits),
/// shown in groups of four. Reading ignores case, dashes and spaces, and takes O for 0 and I or L
/// for 1, so a code read aloud or copied from a message still works. Only its SHA-256 is stored.
struct InviteCode: Sendable, Equatable {
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    static let length = 20

    /// The 20 characters, upper case, without dashes.
    let canonical: String

    /// A fresh random code.
    static func generate() -> InviteCode {
        var generator = SystemRandomNumberGenerator()
        return InviteCode(
            canonical: String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
        )
    }

    private init(canonical: String) { self.canonical = canonical }

    /// Reads a typed code; nil if it cannot be one (wrong length or characters).
    init?(typed text: String) {
        guard text.utf8.count <= 64 else { return nil }
        var characters: [Character] = []
        for character in text.uppercased() where character != "-" && !character.isWhitespace {
            let mapped: Character =
                switch character {
                case "O": "0"
                case "I", "L": "1"
                default: character
                }
            guard Self.alphabet.contains(mapped) else { return nil }
            characters.append(mapped)
        }
        guard characters.count == Self.length else { return nil }
        canonical = String(characters)
    }

    /// `XXXX-XXXX-XXXX-XXXX-XXXX`, as shown to the operator.
    var display: String {
        stride(from: 0, to: Self.length, by: 4).map { start in
            let from = canonical.index(canonical.startIndex, offsetBy: start)
            return String(canonical[from..<canonical.index(from, offsetBy: 4)])
        }.joined(separator: "-")
    }

    /// What the database keeps and looks up.
    var hash: Data { Data(SHA256.hash(data: Data(canonical.utf8))) }
}
