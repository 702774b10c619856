import ConfidantCrypto
import Crypto
import Foundation

/// Text fields sealed with AES-256-GCM under the vault's text key, with the item id and field
/// name as associated data, so a ciphertext moved to another item or field does not open.
///
/// Layout: `12 nonce | ciphertext | 16 tag`; AAD = `"Confidant vault text v1\0" ‖ item id (16) ‖ field (UTF-8)`.
public enum SealedText {
    static func aad(itemID: UUID, field: String) -> [UInt8] {
        var out = Array("Confidant vault text v1\u{0}".utf8)
        Swift.withUnsafeBytes(of: itemID.uuid) { out.append(contentsOf: $0) }
        return out + Array(field.utf8)
    }

    /// Seals `text` as field `field` of item `itemID`.
    public static func seal(_ text: String, itemID: UUID, field: String, key: VaultKey) throws -> Data {
        let box = try AES.GCM.seal(
            Array(text.utf8), using: key.derived("text"), authenticating: aad(itemID: itemID, field: field))
        guard let combined = box.combined else { throw VaultError.corrupted("AES-GCM produced no combined form") }
        return combined
    }

    /// Opens a sealed field; fails when the bytes were altered or belong to another item or field.
    public static func open(_ sealed: Data, itemID: UUID, field: String, key: VaultKey) throws -> String {
        do {
            let box = try AES.GCM.SealedBox(combined: sealed)
            let plain = try AES.GCM.open(
                box, using: key.derived("text"), authenticating: aad(itemID: itemID, field: field))
            return String(decoding: plain, as: UTF8.self)
        } catch {
            throw VaultError.unreadableText("\(field) of \(itemID.canonicalString.prefix(8))")
        }
    }
}
