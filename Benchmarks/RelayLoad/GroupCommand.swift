import ArgumentParser
import AsyncHTTPClient
import ConfidantAPI
import ConfidantCrypto
import ConfidantKit
import Foundation
import NIOPosix
import OpenAPIAsyncHTTPClient

/// How `relay-load group` sends a group message.
enum GroupSendMode: String, ExpressibleByArgument, Sendable, Codable {
    /// Sealed once with a sender key (envelope v3), uploaded once in a shared send frame.
    case shared
    /// Sealed for each member device in its pairwise session (envelope v2), in send frames of
    /// at most 256 envelopes.
    case pairwise
}

/// `relay-load group`: a 1 KiB message to a group of `--members` devices on a child relay, with
/// sender keys and one upload or with pairwise fan-out (docs/BENCHMARKS.md, *Groups*). The
/// members are accounts seeded into the relay's SQLite file (`BenchSeed`), each live on a stream
/// of its own. Two phases: `--messages` sent one at a time while every member is live (the time
/// until the last member device has each, the relay's CPU), then as many again while none is
/// (what the relay stores for them). The sender's work is measured on its own thread: sealing and
/// framing, with a one-to-one message (one v2 envelope in a send frame) as the reference in the
/// same run. A new sender key's distribution is one pairwise message to every member device,
/// which is what `pairwise` sends for every message.
struct GroupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "group", abstract: "Send 1 KiB group messages to many member devices on a child relay.")

    @Option(help: "Member devices, each an account seeded into the relay's database (1 to 4,096).") var members =
        100
    @Option(help: "Messages timed while every member is live, and as many again stored while none is.") var messages =
        20
    @Option(help: "`shared` (sender key, one upload) or `pairwise` (a session envelope for every device).") var mode:
        GroupSendMode = .shared
    @Flag(help: "Print one JSON line instead of the table.") var json = false

    func run() async throws {
        guard (1...SharedSendFrame.maximumRecipients).contains(members), (1...1_000).contains(messages) else {
            throw ValidationError("--members must be 1 to 4,096 and --messages 1 to 1,000.")
        }
        OpenFileLimit.raiseToHardLimit(needing: members * 2 + 200)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-bench-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try ChildServer(dataDirectory: directory, database: nil)
        defer { server.stop() }
        let port = try server.waitForPort()
        guard let base = URL(string: "http://127.0.0.1:\(port)/v1") else { throw ValidationError("Bad port \(port).") }
        let http = HTTPClient(eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton))
        let result: GroupResult
        do {
            let client = { (token: String?) in
                Client(
                    serverURL: base, configuration: APIConfiguration.default,
                    transport: AsyncHTTPClientTransport(configuration: .init(client: http)),
                    middlewares: token.map { [BearerTokenMiddleware(token: $0)] } ?? [])
            }
            let sender = try await BenchUser.make(
                index: 0, client: client, outbox: directory.appendingPathComponent("outbox"))
            result = try await measure(
                sender: sender, port: port, server: server,
                databasePath: directory.appendingPathComponent("relay.sqlite").path)
        } catch {
            try? await http.shutdown()
            throw error
        }
        try? await http.shutdown()
        try BenchOutput.report(result, table: result.table, json: json)
    }

    private func measure(sender: BenchUser, port: Int, server: ChildServer, databasePath: String) async throws
        -> GroupResult
    {
        let eventLoops = MultiThreadedEventLoopGroup.singleton
        BenchOutput.progress("seeding \(members) member accounts into the relay's database")
        let accounts = try BenchSeed.accounts(members, like: sender, in: databasePath)
        if mode == .pairwise { BenchOutput.progress("starting \(members) pairwise sessions") }
        var sealer = try GroupSealer(mode: mode, sender: sender, members: accounts)
        let reference = try GroupSealer.oneToOneCPU(sender: sender, receiver: accounts[0], messages: 200)

        BenchOutput.progress("connecting \(members) member streams")
        let arrivals = GroupArrivals()
        var streams: [BenchStream] = []
        for account in accounts {
            streams.append(
                try await BenchStream.connect(
                    port: port, user: account, on: eventLoops,
                    onEntry: { entry in entry.messageID.map(arrivals.arrived) }))
        }
        for stream in streams { try await stream.caughtUp() }
        let senderStream = try await BenchStream.connect(port: port, user: sender, on: eventLoops, window: 8)
        try await senderStream.caughtUp()

        BenchOutput.progress("sending \(messages) messages to \(members) live member devices (\(mode.rawValue))")
        var sealing = 0.0
        var uploaded = 0
        var envelopeBytes = 0
        var lastDevice: [Double] = []
        let relayCPUBefore = server.cpuSeconds()
        for _ in 0..<messages {
            let message = try sealer.next()
            sealing += message.cpuSeconds
            uploaded += message.frames.reduce(0) { $0 + $1.frame.count }
            envelopeBytes += message.envelopeBytes
            let arrived = arrivals.expect(Set(message.frames.map(\.id)), devices: members)
            let started = ContinuousClock.now
            for frame in message.frames { try await senderStream.send(frame: .binary(frame.frame)) }
            guard await arrived.wait(within: .seconds(120)) else {
                throw ValidationError("A message did not reach all \(members) member devices within 120 s.")
            }
            lastDevice.append(Self.milliseconds(ContinuousClock.now - started))
        }
        try await senderStream.drained()
        let relayCPU = server.cpuSeconds() - relayCPUBefore
        for stream in streams { await stream.close() }

        BenchOutput.progress("storing \(messages) messages for \(members) offline member devices")
        let storedBefore = try StoredBytes.measure(databasePath)
        for _ in 0..<messages {
            for frame in try sealer.next().frames { try await senderStream.send(frame: .binary(frame.frame)) }
        }
        try await senderStream.drained()
        let storedAfter = try StoredBytes.measure(databasePath)
        await senderStream.close()

        lastDevice.sort()
        let count = Double(messages)
        return GroupResult(
            mode: mode, members: members, messages: messages,
            envelopeBytesPerMessage: envelopeBytes / messages, uploadedBytesPerMessage: uploaded / messages,
            senderCPUMicrosecondsPerMessage: sealing / count * 1e6,
            oneToOneSenderCPUMicroseconds: reference * 1e6,
            relayCPUMicrosecondsPerMessage: relayCPU / count * 1e6,
            storedBytesPerMessage: (storedAfter.used - storedBefore.used) / messages,
            storedBytesByTable: storedAfter.delta(from: storedBefore).mapValues { $0 / messages },
            lastDeviceP50Milliseconds: lastDevice[lastDevice.count / 2], lastDeviceMaxMilliseconds: lastDevice.last ?? 0
        )
    }

    private static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e3 + Double(duration.components.attoseconds) / 1e15
    }
}

struct GroupResult: Codable {
    let mode: GroupSendMode
    let members: Int
    let messages: Int
    /// The sealed message's bytes for all members: one envelope with a sender key, N pairwise.
    let envelopeBytesPerMessage: Int
    /// The send frames' bytes.
    let uploadedBytesPerMessage: Int
    /// Sealing and framing, CPU on the sender's thread.
    let senderCPUMicrosecondsPerMessage: Double
    /// The same for a one-to-one message (one v2 envelope in a send frame), the reference.
    let oneToOneSenderCPUMicroseconds: Double
    /// The relay's process, while every member was live and took delivery.
    let relayCPUMicrosecondsPerMessage: Double
    /// Pages the relay's SQLite file holds more, per message stored for offline members.
    let storedBytesPerMessage: Int
    /// The same by table and index (`dbstat`), where SQLite has it.
    let storedBytesByTable: [String: Int]
    /// Send → the last member device's stream has it.
    let lastDeviceP50Milliseconds: Double
    let lastDeviceMaxMilliseconds: Double

    var table: String {
        let perDevice = { (bytes: Int) in Double(bytes - envelopeBytesPerMessage / (mode == .shared ? 1 : members)) }
        return [
            "mode                \(mode.rawValue), \(members) member devices, \(messages) messages of 1 KiB",
            "envelopes           \(envelopeBytesPerMessage) bytes per message",
            String(
                format: "uploaded            %d bytes per message (%.1f per device beyond one envelope)",
                uploadedBytesPerMessage, perDevice(uploadedBytesPerMessage) / Double(members)),
            String(
                format: "sender CPU          %.1f µs per message (a one-to-one message: %.1f µs, %.2fx)",
                senderCPUMicrosecondsPerMessage, oneToOneSenderCPUMicroseconds,
                senderCPUMicrosecondsPerMessage / oneToOneSenderCPUMicroseconds),
            String(format: "relay CPU           %.0f µs per message", relayCPUMicrosecondsPerMessage),
            String(
                format: "relay storage       %d bytes per message (%.1f per device beyond one envelope)",
                storedBytesPerMessage, perDevice(storedBytesPerMessage) / Double(members)),
            "  by table          "
                + storedBytesByTable.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "),
            String(
                format: "last device has it %.1f ms p50, %.1f ms max", lastDeviceP50Milliseconds,
                lastDeviceMaxMilliseconds),
        ].joined(separator: "\n")
    }
}
