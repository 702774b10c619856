import ConfidantAPI
import ConfidantVault
import Foundation
import OpenAPIRuntime

/// A vault backup target on the Confidant server: named backup objects of the signed-in account
/// (`/v1/backup/objects/{name}`), streamed both ways, readable only by that account. The server
/// sees the same as a backup directory would: ciphertext, names (hashes) and sizes.
public struct RelayBackupTarget: BackupTarget {
    private let relay: RelayClient
    private let account: String

    /// The target for a signed-in profile. Transfers may take up to an hour each.
    public init(messenger: Messenger) async throws {
        let account = await messenger.account
        guard let token = account.token else { throw ConfidantKitError.sessionExpired }
        relay = RelayClient(serverURL: account.serverURL, token: token, timeout: .seconds(3600))
        self.account = account.email
    }

    public var description: String { "the Confidant server at \(relay.serverURL.absoluteString) (\(account))" }

    /// The vault names its objects `objects/<hash>`, `catalogs/<hash>` and `manifests/<id>`
    /// (`manifest` before); the server's names are flat, so `/` becomes `.` (the vault's names
    /// have no dots).
    static func objectName(_ name: String) throws -> String {
        guard !name.contains("."), !name.isEmpty else {
            throw VaultError.io("backup object name \(name) cannot be stored on the server")
        }
        return name.replacingOccurrences(of: "/", with: ".")
    }

    /// Whether the account has an object of that name on the server.
    public func exists(_ name: String) async throws -> Bool {
        let path = Operations.BackupObjectExists.Input.Path(name: try Self.objectName(name))
        switch try await relay.call({ try await $0.backupObjectExists(path: path) }) {
        case .ok: return true
        case .notFound: return false
        case .default(let status, _):
            throw status == 401
                ? ConfidantKitError.sessionExpired
                : ConfidantKitError.badResponse("HTTP \(status) when checking whether \(name) exists")
        }
    }

    /// The account's objects whose vault names start with `prefix`, a page at a time.
    public func list(prefix: String) async throws -> [String] {
        let serverPrefix = prefix.isEmpty ? "" : try Self.objectName(prefix)
        var names: [String] = []
        var after: String?
        while true {
            let query = Operations.ListBackupObjects.Input.Query(prefix: serverPrefix, after: after, limit: 1000)
            let page: Components.Schemas.BackupObjectPage
            switch try await relay.call({ try await $0.listBackupObjects(query: query) }) {
            case .ok(let ok): page = try ok.body.json
            case .default(let status, let response): throw problem(status, response)
            }
            names += page.objects.map { $0.name.replacingOccurrences(of: ".", with: "/") }
            guard page.hasMore, let last = page.objects.last?.name else { return names }
            after = last
        }
    }

    /// Streams the file to the server under `name`.
    public func upload(_ file: URL, as name: String) async throws {
        let size = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int64 ?? 0
        let handle = try FileHandle(forReadingFrom: file)
        try await put(.streaming(handle, length: size, chunkSize: 256 * 1024), name: name)
    }

    /// Stores small data (a manifest) under `name`.
    public func write(_ data: Data, as name: String) async throws {
        try await put(HTTPBody(data), name: name)
    }

    private func put(_ body: HTTPBody, name: String) async throws {
        let path = Operations.PutBackupObject.Input.Path(name: try Self.objectName(name))
        switch try await relay.call({ try await $0.putBackupObject(path: path, body: .binary(body)) }) {
        case .ok: return
        case .default(let status, let response): throw problem(status, response)
        }
    }

    private func get(_ name: String) async throws -> HTTPBody {
        let path = Operations.GetBackupObject.Input.Path(name: try Self.objectName(name))
        switch try await relay.call({ try await $0.getBackupObject(path: path) }) {
        case .ok(let ok): return try ok.body.binary
        case .default(404, _): throw VaultError.notFound("\(name) in \(description)")
        case .default(let status, let response): throw problem(status, response)
        }
    }

    /// Streams the object to `file`.
    public func download(_ name: String, to file: URL) async throws {
        let body = try await get(name)
        guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
            throw VaultError.io("cannot create \(file.path)")
        }
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        for try await chunk in body { try handle.write(contentsOf: chunk) }
        try handle.synchronize()
    }

    /// Reads a small object (at most 256 MiB) into memory.
    public func read(_ name: String) async throws -> Data {
        // Manifests and catalogues: small, but cap what is held in memory.
        try await Data(collecting: get(name), upTo: 256 * 1024 * 1024)
    }
}
