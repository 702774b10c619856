import ConfidantTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Files through the CLI, end to end: two `confidant` processes and a real relay.
@Suite("Attachments through the CLI")
struct AttachmentCommandTests {
    struct Line: Decodable {
        let id: String
        let text: String?
        let attachments: [File]
    }

    struct File: Decodable {
        let name: String
        let size: Int
        let contentType: String
    }

    struct Measured: Decodable {
        let status: Int
        let peakKiB: Int
        let stdout: String
        let stderr: String
    }

    /// Runs the CLI under `peak_rss.py`: its exit status and peak resident memory.
    static func measured(_ cli: CLIProcess, _ arguments: [String]) async throws -> Measured {
        var options: [String] = []
        for key in ["CONFIDANT_HOME", "CONFIDANT_PASSPHRASE", "NO_COLOR"] {
            if let value = cli.environment[key] { options += ["--env", "\(key)=\(value)"] }
        }
        let output = try await PythonScript.run(
            "peak_rss.py", options + ["--cwd", cli.directory.path, "--", try CLIExecutable.url.path] + arguments)
        return try JSONDecoder().decode(Measured.self, from: Data(output.utf8))
    }

    static func pattern(_ count: Int, seed: Int) -> Data {
        var bytes = [UInt8](repeating: 0, count: count)
        for index in 0..<count { bytes[index] = UInt8(truncatingIfNeeded: index &* 131 &+ seed &+ index >> 16) }
        return Data(bytes)
    }

    @Test(
        "0 B, 1 B and 20 MiB round-trip byte-identical, the relay sees no name or byte of them; 200 MiB in flat memory; too large is refused first"
    )
    func roundTrip() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let served = try await ChatCommandTests.ServedChat(cli, extra: ["--max-attachment-mib", "220"])
        defer { served.stop() }
        let marker = Data("PLAINTEXT-MARKER-OF-AN-ATTACHMENT".utf8)
        let files = [
            ("empty.bin", Data()), ("one.bin", Data([0x2A])),
            ("holiday-secret-name.mov", marker + Self.pattern(20 << 20, seed: 1) + marker),
        ]
        for (name, bytes) in files { try bytes.write(to: cli.directory.appendingPathComponent(name)) }
        let sent = try await cli.run(
            ["send", "--profile", "alice", served.bob, "three files"] + files.flatMap { ["--attach", $0.0] })
        #expect(sent.status == 0, "\(sent.stderr)")

        for url in try Self.regularFiles(in: served.dataDirectory) {
            let data = try Data(contentsOf: url)
            #expect(data.range(of: marker) == nil, "file bytes in \(url.lastPathComponent)")
            #expect(
                data.range(of: Data("holiday-secret-name".utf8)) == nil, "the file name in \(url.lastPathComponent)")
        }

        let history = try await cli.run(["chat", "history", "--profile", "bob", served.alice, "--json"])
        let lines = try JSONDecoder().decode([Line].self, from: history.stdout)
        let message = try #require(lines.first { $0.text == "three files" })
        #expect(message.attachments.map(\.name) == files.map(\.0))
        #expect(message.attachments.map(\.size) == files.map(\.1.count))
        let out = cli.directory.appendingPathComponent("saved")
        let saved = try await cli.run(["attachment", "save", "--profile", "bob", message.id, "--out", out.path])
        #expect(saved.status == 0, "\(saved.stderr)")
        for (name, bytes) in files {
            #expect(try Data(contentsOf: out.appendingPathComponent(name)) == bytes, "\(name)")
        }
        let missing = try await cli.run(["attachment", "save", "--profile", "bob", UUID().uuidString])
        #expect(missing.status != 0 && missing.stderr.contains("no message"))

        // 200 MiB: peak memory of sending and of saving, next to a 1-byte file in the same run.
        try Data([1]).write(to: cli.directory.appendingPathComponent("tiny.bin"))
        let big = cli.directory.appendingPathComponent("big.bin")
        try Self.pattern(200 << 20, seed: 7).write(to: big)
        let smallSend = try await Self.measured(
            cli, ["send", "--profile", "alice", served.bob, "--attach", "tiny.bin"])
        let bigSend = try await Self.measured(cli, ["send", "--profile", "alice", served.bob, "--attach", "big.bin"])
        #expect(smallSend.status == 0 && bigSend.status == 0, "\(bigSend.stderr)")
        // `chat history` syncs first and, when that fails (the whole suite shares two cores), says
        // so on stderr and shows what the device has: run it again then, never when it synced.
        var received: [Line] = []
        var problems: [String] = []
        for _ in 0..<5 {
            let history = try await cli.run(["chat", "history", "--profile", "bob", served.alice, "--json"])
            received = try JSONDecoder().decode([Line].self, from: history.stdout)
            guard !history.stderr.isEmpty else { break }
            problems.append(history.stderr)
        }
        let tiny = try #require(received.first { $0.attachments.first?.name == "tiny.bin" }, "sync: \(problems)")
        let huge = try #require(received.first { $0.attachments.first?.name == "big.bin" }, "sync: \(problems)")
        let smallSave = try await Self.measured(
            cli, ["attachment", "save", "--profile", "bob", tiny.id, "--out", "big-out"])
        let bigSave = try await Self.measured(
            cli, ["attachment", "save", "--profile", "bob", huge.id, "--out", "big-out"])
        #expect(smallSave.status == 0 && bigSave.status == 0, "\(bigSave.stderr)")
        #expect(
            FileManager.default.contentsEqual(
                atPath: big.path, andPath: cli.directory.appendingPathComponent("big-out/big.bin").path))
        // Flat: a 200 MiB file costs less than 48 MiB more than a 1-byte one.
        #expect(bigSend.peakKiB - smallSend.peakKiB < 48 * 1024, "send: \(smallSend.peakKiB) → \(bigSend.peakKiB) KiB")
        #expect(bigSave.peakKiB - smallSave.peakKiB < 48 * 1024, "save: \(smallSave.peakKiB) → \(bigSave.peakKiB) KiB")
        print(
            "peak RSS, 1 B vs 200 MiB: send \(smallSend.peakKiB) / \(bigSend.peakKiB) KiB, save \(smallSave.peakKiB) / \(bigSave.peakKiB) KiB"
        )

        // Over the server's limit: refused before anything is encrypted or queued.
        let tooBig = cli.directory.appendingPathComponent("too-big.bin")
        #expect(FileManager.default.createFile(atPath: tooBig.path, contents: nil))
        let handle = try FileHandle(forWritingTo: tooBig)
        try handle.truncate(atOffset: 221 << 20)
        try handle.close()
        let refused = try await cli.run(["send", "--profile", "alice", served.bob, "--attach", "too-big.bin"])
        #expect(
            refused.status != 0 && refused.stderr.contains("the server takes attachments up to"), "\(refused.stderr)")
    }

    static func regularFiles(in directory: URL) throws -> [URL] {
        var found: [URL] = []
        let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = enumerator?.nextObject() as? URL {
            if (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true { found.append(url) }
        }
        return found
    }
}
