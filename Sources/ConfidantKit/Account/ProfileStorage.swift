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
    public let url: URL
    /// scrypt cost for new files; existing files carry their own.
    public let parameters: ScryptParameters

    public init(url: URL, parameters: ScryptParameters = .interactive) {
        self.url = url
        self.parameters = parameters
    }

    public func loadIdentity(passphrase: String) throws -> PrivateIdentity? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return try IdentityKeyFile.read(from: url, passphrase: passphrase)
    }

    public func saveIdentity(_ identity: PrivateIdentity, passphrase: String) throws {
        try IdentityKeyFile.write(identity, to: url, passphrase: passphrase, parameters: parameters, overwrite: true)
    }
}

/// A profile's directory: `identity.key` and `store.sqlite`, created 0700.
public struct ProfileStorage: Sendable {
    public let directory: URL
    public let keyStore: any DeviceKeyStore

    public init(directory: URL, keyStore: (any DeviceKeyStore)? = nil, keyParameters: ScryptParameters = .interactive) {
        self.directory = directory
        self.keyStore =
            keyStore
            ?? FileDeviceKeyStore(url: directory.appendingPathComponent("identity.key"), parameters: keyParameters)
    }

    public var storeURL: URL { directory.appendingPathComponent("store.sqlite") }

    func prepare() throws {
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }
}
