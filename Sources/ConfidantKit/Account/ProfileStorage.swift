import ConfidantCrypto
import Foundation

/// Where a device keeps its private identity. On Linux a passphrase-protected key file; an Apple
/// app can implement the same protocol over the Keychain.
public protocol DeviceKeyStore: Sendable {
    /// The stored identity, or nil when there is none yet.
    func loadIdentity(passphrase: String) throws -> PrivateIdentity?
    func saveIdentity(_ identity: PrivateIdentity, passphrase: String) throws
}

/// The identity in a key file (docs/PROTOCOL.md §2): scrypt + AES-256-GCM, mode 0600, written atomically.
public struct FileDeviceKeyStore: DeviceKeyStore {
    /// The key file.
    public let url: URL
    /// scrypt cost for new files; existing files carry their own.
    public let parameters: ScryptParameters

    /// The key file at `url`; new files get `parameters`.
    public init(url: URL, parameters: ScryptParameters = .interactive) {
        self.url = url
        self.parameters = parameters
    }

    /// Reads the identity; nil when the file does not exist yet.
    /// - Throws: `IdentityKeyFileError` for a wrong passphrase or a damaged file.
    public func loadIdentity(passphrase: String) throws -> PrivateIdentity? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return try IdentityKeyFile.read(from: url, passphrase: passphrase)
    }

    /// Writes the identity, replacing the file atomically.
    public func saveIdentity(_ identity: PrivateIdentity, passphrase: String) throws {
        try IdentityKeyFile.write(identity, to: url, passphrase: passphrase, parameters: parameters, overwrite: true)
    }
}

/// A profile's directory: `identity.key` and `store.sqlite`, created 0700.
public struct ProfileStorage: Sendable {
    /// The profile's directory (0700).
    public let directory: URL
    /// Where the device key is kept.
    public let keyStore: any DeviceKeyStore

    /// The profile in `directory`, with its key in `identity.key` there unless `keyStore` says otherwise.
    public init(directory: URL, keyStore: (any DeviceKeyStore)? = nil, keyParameters: ScryptParameters = .interactive) {
        self.directory = directory
        self.keyStore =
            keyStore
            ?? FileDeviceKeyStore(url: directory.appendingPathComponent("identity.key"), parameters: keyParameters)
    }

    /// The local store's SQLite file.
    public var storeURL: URL { directory.appendingPathComponent("store.sqlite") }

    func prepare() throws {
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }
}
