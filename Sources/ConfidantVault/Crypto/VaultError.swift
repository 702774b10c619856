import Foundation

/// Errors from the vault, with what a user can do about them.
public enum VaultError: Error, Equatable, CustomStringConvertible {
    case wrongPassphrase
    /// The vault is closed: open it with its passphrase first.
    case locked
    case corrupted(String)
    case tampered(item: String, segment: Int)
    case unreadableText(String)
    case truncated(item: String, afterSegment: Int)
    case trailingData(item: String)
    case notInitialized(path: String)
    case alreadyInitialized(path: String)
    case notFound(String)
    case io(String)
    /// The target holds a backup under this vault's name that this vault's key does not
    /// authenticate: another vault's (or an altered) manifest, which a backup will not replace.
    case backupBelongsToAnotherVault(target: String)
    /// Several backups on the target open with the passphrase; restore needs one of these ids.
    case ambiguousBackup(ids: [String])

    public var description: String {
        switch self {
        case .wrongPassphrase: return "wrong passphrase for this vault"
        case .locked: return "the vault is locked; unlock it with its passphrase first"
        case .corrupted(let why): return "the vault is damaged: \(why)"
        case .tampered(let item, let segment):
            return "\(item): segment \(segment) failed authentication (altered, reordered or from another item)"
        case .unreadableText(let what): return "\(what) does not decrypt: it was altered, or belongs to another item"
        case .truncated(let item, let segment):
            return "\(item): the encrypted file ends after segment \(segment) — it is truncated"
        case .trailingData(let item): return "\(item): unexpected data after the final segment"
        case .notInitialized(let path): return "no vault at \(path)"
        case .alreadyInitialized(let path): return "a vault already exists at \(path)"
        case .notFound(let what): return "\(what) not found"
        case .io(let why): return why
        case .backupBelongsToAnotherVault(let target):
            return
                "\(target) holds a backup under this vault's name that this vault did not write; it was left alone and nothing was backed up"
        case .ambiguousBackup(let ids):
            return
                "several backups open with this passphrase (\(ids.joined(separator: ", "))); choose one by its backup id"
        }
    }
}
