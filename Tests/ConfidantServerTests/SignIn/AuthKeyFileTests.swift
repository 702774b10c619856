import ConfidantServer
import ConfidantTestSupport
import Foundation
import Testing

/// The server's auth key (it seals every TOTP secret and operator mapping): created private,
/// never replaced.
@Suite("The auth key file")
struct AuthKeyFileTests {
    static func scratch() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-authkey-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("created with mode 0600 and kept across restarts")
    func createdPrivateAndKept() async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("auth.key")
        try await TestRelay.run(adjust: { $0.authKeyFile = file }) { _ in }
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let first = try Data(contentsOf: file)
        #expect(first.count == 32)
        try await TestRelay.run(adjust: { $0.authKeyFile = file }) { _ in }
        #expect(try Data(contentsOf: file) == first)
    }

    @Test("a key that cannot be read, or has the wrong size, stops the server instead of being replaced")
    func neverReplaced() async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A link whose target is gone (a volume not mounted, say): reading fails.
        let link = directory.appendingPathComponent("linked.key")
        let target = directory.appendingPathComponent("unmounted/auth.key")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        await #expect(throws: AuthKeyFileError.self) {
            try await TestRelay.run(adjust: { $0.authKeyFile = link }) { _ in }
        }
        #expect(!FileManager.default.fileExists(atPath: target.path), "no new key was written behind the link")
        // A truncated key file.
        let short = directory.appendingPathComponent("short.key")
        try Data(repeating: 7, count: 20).write(to: short)
        await #expect(throws: AuthKeyFileError.wrongSize(path: short.path, bytes: 20)) {
            try await TestRelay.run(adjust: { $0.authKeyFile = short }) { _ in }
        }
        #expect(try Data(contentsOf: short) == Data(repeating: 7, count: 20))
    }
}
