import Foundation
import Testing

@Suite struct VaultCommandTests {
    @Test func journalBackupAndRestoreThroughTheCLI() async throws {
        var cli = try CLIProcess()
        defer { cli.remove() }
        #expect(try await cli.run(["vault", "init", "--scrypt-log2n", "10"]).status == 0)
        #expect(try await cli.run(["vault", "chapter", "add", "Summer"]).status == 0)
        let photo = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 17) }
        try Data(photo).write(to: cli.directory.appendingPathComponent("beach.jpg"))
        let added = try await cli.run([
            "vault", "add", "--chapter", "Summer", "--text", "Warm sea", "--file", "beach.jpg",
        ])
        #expect(added.status == 0, "\(added.stderr)")
        let listed = try await cli.run(["vault", "list"])
        #expect(listed.text.contains("Warm sea"))
        let id = String(listed.text.prefix(8))
        #expect(try await cli.run(["vault", "show", id]).text.contains("beach.jpg"))
        let edited = try await cli.run(["vault", "edit", id, "--text", "Warm sea, cold wind", "--date", "2024-06-01"])
        #expect(edited.status == 0, "\(edited.stderr)")
        let shown = try await cli.run(["vault", "show", id])
        #expect(shown.text.contains("Warm sea, cold wind") && shown.text.contains("2024-06-01"))
        let badDate = try await cli.run(["vault", "edit", id, "--date", "June"])
        #expect(badDate.status != 0 && badDate.stderr.contains("YYYY-MM-DD"))

        #expect(try await cli.run(["vault", "backup", "--to", "backup"]).status == 0)
        let again = try await cli.run(["vault", "backup", "--to", "backup"])
        #expect(again.text.contains("0 object(s) sent"))

        cli.environment["CONFIDANT_HOME"] = cli.directory.appendingPathComponent("other-home").path
        cli.environment["CONFIDANT_PASSPHRASE"] = "wrong"
        let refused = try await cli.run(["vault", "restore", "--from", "backup"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("wrong passphrase"))
        cli.environment["CONFIDANT_PASSPHRASE"] = "test passphrase"
        #expect(try await cli.run(["vault", "restore", "--from", "backup"]).status == 0)
        #expect(try await cli.run(["vault", "show", id]).text.contains("cold wind"), "the edit is in the backup")
        #expect(try await cli.run(["vault", "export", id, "restored"]).status == 0)
        #expect(try Data(contentsOf: cli.directory.appendingPathComponent("restored/beach.jpg")) == Data(photo))

        let server = try await cli.run(["vault", "backup", "--to", "server"])
        #expect(server.status != 0)
        // No account in this profile:
        #expect(server.stderr.contains("run `confidant account register` or `confidant account login`"))
    }

    @Test func passphraseFileIsReadByItsFirstLineAndBounded() async throws {
        var cli = try CLIProcess()
        defer { cli.remove() }
        cli.environment["CONFIDANT_PASSPHRASE"] = nil
        let file = cli.directory.appendingPathComponent("passphrase")
        try Data("first line passphrase\nsomething else\n".utf8).write(to: file)
        #expect(
            try await cli.run(["vault", "init", "--scrypt-log2n", "10", "--passphrase-file", "passphrase"]).status == 0)
        // The first line alone is the passphrase.
        cli.environment["CONFIDANT_PASSPHRASE"] = "first line passphrase"
        #expect(try await cli.run(["vault", "chapter", "add", "C"]).status == 0)
        cli.environment["CONFIDANT_PASSPHRASE"] = nil
        // A file given by mistake is refused, not read whole.
        try Data(repeating: UInt8(ascii: "a"), count: 200_000).write(to: file)
        let refused = try await cli.run(["vault", "list", "--passphrase-file", "passphrase"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("is longer than 65536 bytes"), "\(refused.stderr)")
    }

    @Test func verifyReportsDamageByName() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        #expect(try await cli.run(["vault", "init", "--scrypt-log2n", "10"]).status == 0)
        #expect(try await cli.run(["vault", "chapter", "add", "C"]).status == 0)
        try Data(repeating: 7, count: 150_000).write(to: cli.directory.appendingPathComponent("clip.mov"))
        #expect(try await cli.run(["vault", "add", "--chapter", "C", "--file", "clip.mov"]).status == 0)
        let objects = cli.directory.appendingPathComponent("home/default/vault/objects")
        let enumerator = FileManager.default.enumerator(at: objects, includingPropertiesForKeys: [.isRegularFileKey])
        var object: URL?
        while let url = enumerator?.nextObject() as? URL {
            if (try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true { object = url }
        }
        let url = try #require(object)
        var bytes = try Data(contentsOf: url)
        bytes[bytes.count - 3] ^= 1
        try bytes.write(to: url)
        let verify = try await cli.run(["vault", "verify"])
        #expect(verify.status != 0)
        #expect(verify.text.contains("clip.mov: segment 3 failed authentication"))
    }

    /// A 256 MiB file goes in and out in constant memory: the peak resident size of the
    /// `confidant` process stays far below the file's size.
    @Test func largeFileInConstantMemory() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        #expect(try await cli.run(["vault", "init", "--scrypt-log2n", "10"]).status == 0)
        #expect(try await cli.run(["vault", "chapter", "add", "Video"]).status == 0)
        let big = cli.directory.appendingPathComponent("film.mp4")
        #expect(FileManager.default.createFile(atPath: big.path, contents: nil))
        let handle = try FileHandle(forWritingTo: big)
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        for index in 0..<256 {
            for j in stride(from: 0, to: chunk.count, by: 4096) { chunk[j] = UInt8(truncatingIfNeeded: index &+ j) }
            try handle.write(contentsOf: chunk)
        }
        try handle.close()
        // Python measures only its own child, so tests running in parallel do not disturb the figure.
        let measure = """
            import resource, subprocess, sys
            code = subprocess.run(sys.argv[1:]).returncode
            print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
            sys.exit(code)
            """
        let executable = try CLIProcess.executable.path
        let add = try await cli.run(
            ["python3", "-c", measure, executable, "vault", "add", "--chapter", "Video", "--file", "film.mp4"],
            executable: URL(fileURLWithPath: "/usr/bin/env"))
        #expect(add.status == 0, "\(add.stderr)")
        let addKiB = Int(add.text.split(separator: "\n").last ?? "") ?? .max
        let id = String(try await cli.run(["vault", "list"]).text.prefix(8))
        let export = try await cli.run(
            ["python3", "-c", measure, executable, "vault", "export", id, "out"],
            executable: URL(fileURLWithPath: "/usr/bin/env"))
        #expect(export.status == 0, "\(export.stderr)")
        let exportKiB = Int(export.text.split(separator: "\n").last ?? "") ?? .max
        #expect(addKiB < 96 * 1024, "peak RSS adding 256 MiB: \(addKiB) KiB")
        #expect(exportKiB < 96 * 1024, "peak RSS exporting 256 MiB: \(exportKiB) KiB")
        print("peak RSS for a 256 MiB file: add \(addKiB / 1024) MiB, export \(exportKiB / 1024) MiB")
        let attributes = try FileManager.default.attributesOfItem(
            atPath: cli.directory.appendingPathComponent("out/film.mp4").path)
        #expect((attributes[.size] as? Int) == 256 << 20)
        #expect(try Vault256.sameBytes(big, cli.directory.appendingPathComponent("out/film.mp4")))
    }
}

enum Vault256 {
    /// Compares two files in chunks, without loading either whole.
    static func sameBytes(_ a: URL, _ b: URL) throws -> Bool {
        let ha = try FileHandle(forReadingFrom: a)
        let hb = try FileHandle(forReadingFrom: b)
        defer {
            try? ha.close()
            try? hb.close()
        }
        while true {
            let x = try ha.read(upToCount: 1 << 20) ?? Data()
            let y = try hb.read(upToCount: 1 << 20) ?? Data()
            if x != y { return false }
            if x.isEmpty { return true }
        }
    }
}
