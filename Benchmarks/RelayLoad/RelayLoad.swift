import ArgumentParser
import AsyncHTTPClient
import ConfidantAPI
import ConfidantCrypto
import ConfidantKit
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import Synchronization
import WebSocketKit

/// `relay-load`: starts a relay as a child process on a free loopback port, signs up
/// sender/receiver pairs, pre-seals every envelope (so sealing is not measured), then sends (over
/// each sender's WebSocket, or one HTTP request per message) while the receivers take delivery
/// over WebSockets and acknowledge. Reports messages per
/// second persisted and delivered, send-to-receive latency, and the server's peak RSS; optionally
/// holds many idle WebSockets and reports the server's RSS with them open.
@main
struct RelayLoad: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay-load",
        abstract: "Load-test the relay: N sender/receiver pairs over HTTP and WebSockets on loopback.",
        discussion: "Benchmarks/relay.sh runs the set reported in docs/BENCHMARKS.md.",
        subcommands: [LoadCommand.self, KitCommand.self, ChildRelayCommand.self, TokenCommand.self],
        defaultSubcommand: LoadCommand.self
    )

    /// `kit` runs its messengers' concurrency where `confidant chat` does (`EventLoopConcurrency`),
    /// unless told `--concurrency pool`; that has to be settled before anything runs.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if let kit = command as? KitCommand, kit.concurrency == .eventLoops { EventLoopConcurrency.install() }
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}

/// The load test itself.
struct LoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Run one load test against a child relay.")

    @Option(help: "Sender/receiver pairs.") var pairs = 32
    @Option(help: "Messages in all.") var messages = 20_000
    @Option(help: "Target send rate in messages per second (default: as fast as the server takes them).") var rate:
        Double?
    @Option(
        help:
            "How senders send: `stream` (binary send frames over their WebSocket, up to --window unanswered each, as ConfidantKit does), `json-stream` (the same with JSON `StreamRequest` frames) or `http` (one POST /v1/messages per message)."
    )
    var transport: SendTransport = .stream
    @Option(help: "Sends a stream sender may have waiting for their receipt.") var window = 64
    @Option(
        help:
            "Idle streams held open through the run, one per account, the accounts seeded into the relay's SQLite file (BenchSeed; 0 = none)."
    )
    var idle = 0
    @Option(
        help:
            "Loopback source addresses the idle streams come from, 127.0.0.2 on (default: one per 20,000 streams); one address has about 28,000 ports."
    )
    var sourceAddresses: Int?
    @Option(
        help:
            "Entries left waiting unread in each receiver's mailbox through the run, seeded into the relay's database (SQLite, or PostgreSQL through psql) before the receivers connect (they resume after them): each send checks its recipient's mailbox against the limit of 100,000 (0 = none)."
    )
    var backlog = 0
    @Option(help: "Passed to `confidant serve --database` (default: SQLite in a temporary directory).") var database:
        String?
    @Option(
        help:
            "How receivers take envelopes: `binary` (binary delivery frames, as ConfidantKit asks for them) or `json` (`{\"entries\": …}` text frames)."
    )
    var deliveries: DeliveryForm = .binary
    @Option(
        help:
            "How stream senders get their receipts: `binary` (binary receipt frames, several to a frame, as ConfidantKit asks for them) or `json` (a `{\"receipt\": …}` text frame each)."
    )
    var receipts: DeliveryForm = .binary
    @Flag(help: "Print one JSON line instead of the table.") var json = false

    func run() async throws {
        guard pairs > 0, messages >= pairs else {
            throw ValidationError("Need at least one pair and one message per pair.")
        }
        guard idle >= 0, idle == 0 || database == nil else {
            throw ValidationError("--idle seeds its accounts into the relay's SQLite file; leave out --database.")
        }
        guard backlog >= 0, backlog == 0 || database == nil || database?.hasPrefix("postgres") == true else {
            throw ValidationError("--backlog seeds its entries into SQLite in the data directory or into PostgreSQL.")
        }
        guard backlog + messages / pairs <= 100_000 else {
            throw ValidationError("--backlog and each receiver's messages must fit the mailbox limit of 100,000.")
        }
        // The relay inherits this process's limit on open files, and both hold a socket per stream
        // (with 19,000 idle streams and 16 pairs the relay held 19,055 descriptors, this 19,059).
        if idle > 0 { OpenFileLimit.raiseToHardLimit(needing: idle + pairs * 2 + 200) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-bench-\(UUID())")
        defer {
            if ProcessInfo.processInfo.environment["CONFIDANT_BENCH_KEEP"] == nil {
                try? FileManager.default.removeItem(at: directory)
            }
        }
        let server = try ChildServer(dataDirectory: directory, database: database)
        defer { server.stop() }
        let port = try server.waitForPort()

        let eventLoops = MultiThreadedEventLoopGroup.singleton
        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(8, pairs)
        let http = HTTPClient(eventLoopGroupProvider: .shared(eventLoops), configuration: clientConfiguration)
        let result: BenchResult
        do {
            result = try await measure(
                port: port, server: server, outbox: directory.appendingPathComponent("outbox"),
                databasePath: directory.appendingPathComponent("relay.sqlite").path, http: http,
                eventLoops: eventLoops)
        } catch {
            try? await http.shutdown()
            throw error
        }
        try? await http.shutdown()
        try BenchOutput.report(result, table: result.table, json: json)
    }

    private func measure(
        port: Int, server: ChildServer, outbox: URL, databasePath: String, http: HTTPClient,
        eventLoops: MultiThreadedEventLoopGroup
    ) async throws -> BenchResult {
        guard let base = URL(string: "http://127.0.0.1:\(port)/v1") else { throw ValidationError("Bad port \(port).") }
        func client(_ token: String?) -> Client {
            Client(
                serverURL: base, configuration: APIConfiguration.default,
                transport: AsyncHTTPClientTransport(configuration: .init(client: http)),
                middlewares: token.map { [BearerTokenMiddleware(token: $0)] } ?? [])
        }

        progress("signing up \(pairs * 2) users")
        var users: [BenchUser] = []
        for index in 0..<(pairs * 2) {
            users.append(try await BenchUser.make(index: index, client: client, outbox: outbox))
        }
        var held: [BenchStream] = []
        var idleRSS: Int?
        if idle > 0 {
            let template = try await BenchUser.make(index: pairs * 2, client: client, outbox: outbox)
            progress("seeding \(idle) accounts into the relay's database")
            let accounts = try BenchSeed.accounts(idle, like: template, in: databasePath)
            let addresses = sourceAddresses ?? (idle / 20_000 + 1)
            progress("opening \(idle) idle streams from \(addresses) source address(es)")
            held = try await Self.open(accounts, port: port, addresses: addresses, on: eventLoops)
            try await Task.sleep(for: .seconds(1))
            idleRSS = server.memory().current
        }
        var resumeAfter: Int64 = 0
        if backlog > 0 {
            progress("seeding \(backlog) unread entries into each of \(pairs) receivers' mailboxes")
            let receivers = (0..<pairs).map { users[2 * $0 + 1] }
            if let database {
                resumeAfter = try BenchSeed.backlog(backlog, for: receivers, from: users[0], postgres: database)
            } else {
                resumeAfter = try BenchSeed.backlog(backlog, for: receivers, from: users[0], in: databasePath)
            }
        }
        progress("sealing \(messages) envelopes")
        let perPair = messages / pairs
        // Sealed and, for the stream, encoded as frames ahead of time: the generator shares the
        // server's cores, and neither is what is measured.
        let frameEncoder = StreamCoding.encoder()
        var batches: [[(id: UUID, body: Components.Schemas.MessageBatch, frame: BenchSendFrame)]] = []
        for pair in 0..<pairs {
            let sender = users[2 * pair]
            let receiver = users[2 * pair + 1]
            batches.append(
                try (0..<perPair).map { index in
                    let id = UUID.timeOrdered()
                    let envelope = try SealedEnvelope.seal(
                        Data("benchmark message \(index) ".utf8) + Data(count: 200), from: sender.identity,
                        senderUserID: sender.id, to: receiver.identity.publicIdentity,
                        recipientUserID: receiver.id, messageID: id)
                    let body = Components.Schemas.MessageBatch(
                        messageId: id.canonicalString,
                        envelopes: [
                            .init(
                                recipientUserId: receiver.id.uuidString,
                                recipientDeviceId: receiver.identity.deviceID.uuidString,
                                envelope: .init(envelope.serialized))
                        ])
                    let frame: BenchSendFrame =
                        switch self.transport {
                        case .stream: .binary(try StreamSendFrame(envelopes: [envelope.serialized]).serialized())
                        case .jsonStream:
                            .text(
                                String(
                                    decoding: try frameEncoder.encode(Components.Schemas.StreamRequest(send: body)),
                                    as: UTF8.self))
                        case .http: .text("")
                        }
                    return (id, body, frame)
                })
        }
        let total = perPair * pairs
        let sentAt = LockedBox<[UUID: ContinuousClock.Instant]>([:])
        let latencies = LockedBox<[Double]>([])
        // Every id is counted once; another copy of one is a duplicate (relay.sh's runs check both).
        let seen = LockedBox<Set<UUID>>([])
        let duplicates = LockedBox(0)
        let (done, doneContinuation) = AsyncStream<Void>.makeStream()

        progress("connecting \(pairs) receivers")
        var streams: [BenchStream] = []
        for pair in 0..<pairs {
            let stream = try await BenchStream.connect(
                port: port, user: users[2 * pair + 1], on: eventLoops, deliveries: deliveries, after: resumeAfter,
                onEntry: { entry in
                    guard let id = entry.messageID else { return }
                    let now = ContinuousClock.now
                    guard let start = sentAt.withLock({ $0[id] }) else { return }
                    guard seen.withLock({ $0.insert(id).inserted }) else {
                        duplicates.withLock { $0 += 1 }
                        return
                    }
                    let count = latencies.withLock { list in
                        list.append(
                            Double((now - start).components.attoseconds) / 1e15 + Double(
                                (now - start).components.seconds) * 1000)
                        return list.count
                    }
                    if count == total { doneContinuation.yield() }
                })
            streams.append(stream)
        }
        for stream in streams { try await stream.caughtUp() }

        var senders: [BenchStream] = []
        let refusals = LockedBox<[String]>([])
        if transport != .http {
            progress("connecting \(pairs) senders")
            for pair in 0..<pairs {
                senders.append(
                    try await BenchStream.connect(
                        port: port, user: users[2 * pair], on: eventLoops, window: window, receipts: receipts,
                        onRefused: { refused in refusals.withLock { $0.append("\(refused.error): \(refused.message)") }
                        }))
            }
            for stream in senders { try await stream.caughtUp() }
        }

        progress("sending \(total) messages over \(transport.rawValue)")
        let started = ContinuousClock.now
        let serverCPUBefore = server.cpuSeconds()
        let threadsBefore = server.threadCPUSeconds()
        let generatorCPUBefore = ChildServer.ownCPUSeconds()
        let interval = rate.map { Duration.seconds(Double(pairs) / $0) }
        let transport = transport
        try await withThrowingTaskGroup(of: Void.self) { group in
            for pair in 0..<pairs {
                let sender = client(users[2 * pair].token)
                let stream = senders.isEmpty ? nil : senders[pair]
                let batch = batches[pair]
                group.addTask {
                    if interval == nil, let stream {
                        // As fast as the relay answers: sent from the event loop as receipts come.
                        await stream.pump(batch.map { ($0.id, $0.frame) }) { id in
                            sentAt.withLock { $0[id] = ContinuousClock.now }
                        }
                        return
                    }
                    var next = ContinuousClock.now
                    for (id, body, frame) in batch {
                        if let interval {
                            try await Task.sleep(until: next, clock: .continuous)
                            next += interval
                        }
                        sentAt.withLock { $0[id] = ContinuousClock.now }
                        switch transport {
                        case .stream, .jsonStream: try await stream?.send(frame: frame)
                        case .http: _ = try await sender.sendMessage(body: .json(body)).ok
                        }
                    }
                    try await stream?.drained()
                }
            }
            try await group.waitForAll()
        }
        if let refused = refusals.withLock({ $0.first }) {
            throw ValidationError("The server refused \(refusals.withLock { $0.count }) sends, the first: \(refused)")
        }
        let sentElapsed = ContinuousClock.now - started
        // Wait for delivery, but give up (with what is missing) when nothing arrives for 15 s.
        let complete = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in done { return true }
                return false
            }
            group.addTask {
                var last = -1
                while true {
                    try? await Task.sleep(for: .seconds(15))
                    let count = latencies.withLock { $0.count }
                    if count == last || Task.isCancelled { return false }
                    last = count
                }
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        guard complete else {
            let count = latencies.withLock { $0.count }
            throw ValidationError("Only \(count) of \(total) messages were delivered; nothing arrived for 15 s.")
        }
        let elapsed = ContinuousClock.now - started
        let serverCPU = server.cpuSeconds() - serverCPUBefore
        let threads = server.threadCPUSeconds()
        let generatorCPU = ChildServer.ownCPUSeconds() - generatorCPUBefore
        let peakDuringRun = server.memory().peak
        for stream in streams + senders { await stream.close() }

        for stream in held { await stream.close() }

        let sorted = latencies.withLock { $0 }.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let sendSeconds = Double(sentElapsed.components.seconds) + Double(sentElapsed.components.attoseconds) / 1e18
        return BenchResult(
            database: database == nil ? "sqlite" : "postgresql", transport: transport.rawValue,
            deliveries: deliveries.rawValue, receipts: transport == .http ? nil : receipts.rawValue, pairs: pairs,
            messages: total,
            targetRate: rate, persistedPerSecond: Double(total) / sendSeconds,
            deliveredPerSecond: Double(total) / seconds,
            p50Milliseconds: percentile(0.50), p99Milliseconds: percentile(0.99), maxMilliseconds: sorted.last ?? 0,
            serverCPUMicrosecondsPerMessage: serverCPU / Double(total) * 1e6,
            writerCPUMicrosecondsPerMessage: (threads.writer - threadsBefore.writer) / Double(total) * 1e6,
            eventLoopCPUMicrosecondsPerMessage: (threads.eventLoops - threadsBefore.eventLoops) / Double(total) * 1e6,
            generatorCPUMicrosecondsPerMessage: generatorCPU / Double(total) * 1e6,
            serverPeakRSSMiB: Double(peakDuringRun) / 1_048_576, idleConnections: idle,
            serverRSSWithIdleMiB: idleRSS.map { Double($0) / 1_048_576 },
            lost: total - seen.withLock { $0.count }, duplicated: duplicates.withLock { $0 })
    }

    private func progress(_ text: String) { BenchOutput.progress(text) }

    /// Streams for `accounts`, caught up, from 127.0.0.2 … 127.0.0.(1 + `addresses`) in turn; 256
    /// connecting at a time.
    private static func open(
        _ accounts: [BenchUser], port: Int, addresses: Int, on group: MultiThreadedEventLoopGroup
    ) async throws -> [BenchStream] {
        let sources = (0..<max(1, addresses)).map { "127.0.0.\(2 + $0 % 250)" }
        return try await withThrowingTaskGroup(of: BenchStream.self) { tasks in
            var streams: [BenchStream] = []
            streams.reserveCapacity(accounts.count)
            for (index, account) in accounts.enumerated() {
                if index >= 256, let stream = try await tasks.next() { streams.append(stream) }
                tasks.addTask {
                    let stream = try await BenchStream.connect(
                        port: port, user: account, from: sources[index % sources.count], on: group)
                    try await stream.caughtUp()
                    return stream
                }
                if (index + 1) % 5_000 == 0 { BenchOutput.progress("\(index + 1) streams open") }
            }
            while let stream = try await tasks.next() { streams.append(stream) }
            return streams
        }
    }
}

/// The benchmark's own limit on open files: raised to the hard limit, which the relay it starts
/// inherits (the server's defaults are left alone). Says so when even that is too low.
enum OpenFileLimit {
    static func raiseToHardLimit(needing: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        if Int(limit.rlim_max) < needing {
            BenchOutput.progress(
                "the hard limit on open files is \(limit.rlim_max), below the \(needing) this run needs: raise it (ulimit -Hn, as root)"
            )
        }
    }
}

/// What the benchmark's commands print.
enum BenchOutput {
    /// A step, on standard error.
    static func progress(_ text: String) {
        FileHandle.standardError.write(Data("bench: \(text)\n".utf8))
    }

    /// The result: `table`, or one JSON line with `json`.
    static func report(_ result: some Encodable, table: String, json: Bool) throws {
        guard json else { return print(table) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(String(decoding: try encoder.encode(result), as: UTF8.self))
    }
}

/// How the benchmark's senders send.
enum SendTransport: String, ExpressibleByArgument, Sendable {
    case stream
    case jsonStream = "json-stream"
    case http
}

/// How a stream's envelopes (`/v1/stream?deliveries=`) or receipts (`receipts=`) come.
enum DeliveryForm: String, ExpressibleByArgument, Sendable {
    case binary
    case json
}

/// A send as it goes over the stream, encoded before the clock starts.
enum BenchSendFrame: Sendable {
    /// A `StreamRequest` in JSON.
    case text(String)
    /// A `StreamSendFrame`.
    case binary(Data)
}

struct BenchResult: Codable {
    let database: String
    let transport: String
    /// How receivers took envelopes (`binary` or `json`).
    let deliveries: String
    /// How stream senders took their receipts (`binary` or `json`); nil over HTTP.
    let receipts: String?
    let pairs: Int
    let messages: Int
    let targetRate: Double?
    let persistedPerSecond: Double
    let deliveredPerSecond: Double
    let p50Milliseconds: Double
    let p99Milliseconds: Double
    let maxMilliseconds: Double
    /// CPU time (user + system) per message: steadier than rates on a machine whose speed varies.
    let serverCPUMicrosecondsPerMessage: Double
    /// Of it, the write connection's thread's and the event loops' (`ChildServer.threadCPUSeconds`).
    let writerCPUMicrosecondsPerMessage: Double
    let eventLoopCPUMicrosecondsPerMessage: Double
    let generatorCPUMicrosecondsPerMessage: Double
    let serverPeakRSSMiB: Double
    let idleConnections: Int
    let serverRSSWithIdleMiB: Double?
    /// Sent and never delivered; delivered more than once. Both must be 0.
    let lost: Int
    let duplicated: Int

    var table: String {
        var lines = [
            "database            \(database)",
            "sending over        \(transport)",
            "deliveries          \(deliveries)",
            "receipts            \(receipts ?? "HTTP responses")",
            "pairs               \(pairs)",
            "messages            \(messages)" + (targetRate.map { " at a target of \(Int($0))/s" } ?? " (open loop)"),
            "persisted           \(Int(persistedPerSecond)) messages/s",
            "delivered           \(Int(deliveredPerSecond)) messages/s",
            String(
                format: "latency p50/p99/max %.1f / %.1f / %.1f ms", p50Milliseconds, p99Milliseconds, maxMilliseconds),
            String(
                format: "CPU per message     server %.0f µs (write thread %.0f, event loops %.0f), generator %.0f µs",
                serverCPUMicrosecondsPerMessage, writerCPUMicrosecondsPerMessage, eventLoopCPUMicrosecondsPerMessage,
                generatorCPUMicrosecondsPerMessage),
            String(format: "server peak RSS     %.0f MiB", serverPeakRSSMiB),
            "lost / duplicated   \(lost) / \(duplicated)",
        ]
        if let serverRSSWithIdleMiB {
            lines.append(
                String(format: "server RSS with %d idle WebSockets: %.0f MiB", idleConnections, serverRSSWithIdleMiB))
        }
        return lines.joined(separator: "\n")
    }
}

/// One signed-in benchmark user.
struct BenchUser: Sendable {
    let id: UUID
    let identity: PrivateIdentity
    let token: String

    /// Signs up and signs in; the relay mails a code to prove the address, which the benchmark
    /// reads from the child relay's development outbox.
    static func make(index: Int, client: (String?) -> Client, outbox: URL) async throws -> BenchUser {
        let email = "bench\(index)-\(UUID().uuidString.prefix(6).lowercased())@example.com"
        let password = "benchmark password \(index)"
        let anonymous = client(nil)
        let user = try await anonymous.signUp(
            body: .json(.init(email: email, password: password, displayName: "Bench \(index)"))
        ).created.body.json
        let identity = try PrivateIdentity.generate()
        let challenge = try await anonymous.createDeviceChallenge().created.body.json
        let start = try await anonymous.startSignIn(
            body: .json(
                .init(
                    email: email, identity: .init(identity.publicIdentity.serialized),
                    proof: try .init(signing: challenge, email: email, identity: identity)))
        ).created.body.json
        guard let transaction = start.transactionId else { throw ValidationError("The sign-in has no transaction.") }
        var progress = try await anonymous.answerSignInStep(
            path: .init(transactionId: transaction), body: .json(.init(method: .password, answer: password))
        ).ok.body.json
        if progress.step?.method == .emailCode {
            progress = try await anonymous.answerSignInStep(
                path: .init(transactionId: transaction),
                body: .json(.init(method: .emailCode, answer: try mailedCode(to: email, in: outbox)))
            ).ok.body.json
        }
        guard let session = progress.session else { throw ValidationError("The sign-in asked for more steps.") }
        guard let id = UUID(uuidString: user.id) else {
            throw ValidationError("The server returned a user id that is not a UUID.")
        }
        return BenchUser(id: id, identity: identity, token: session.token)
    }

    /// The code in the development outbox's message to `email`.
    static func mailedCode(to email: String, in outbox: URL) throws -> String {
        for name in try FileManager.default.contentsOfDirectory(atPath: outbox.path).sorted().reversed() {
            let text = try String(contentsOf: outbox.appendingPathComponent(name), encoding: .utf8)
            guard text.contains("To: \(email)\n"), let range = text.range(of: "sign-in code is ") else { continue }
            return String(text[range.upperBound...].prefix { $0 != "." })
        }
        throw ValidationError("No sign-in code for \(email) in \(outbox.path).")
    }
}

/// A benchmark user's WebSocket: hands each entry to `onEntry` and acknowledges in batches; as a
/// sender, sends message batches with at most `window` of them waiting for their receipt.
final class BenchStream: Sendable {
    private let socket: BenchSocket
    private let caughtUpSignal: AsyncStream<Void>
    private let window: SendWindow

    private init(socket: BenchSocket, caughtUpSignal: AsyncStream<Void>, window: SendWindow) {
        self.socket = socket
        self.caughtUpSignal = caughtUpSignal
        self.window = window
    }

    static func connect(
        port: Int, user: BenchUser, from source: String? = nil, on group: any EventLoopGroup, window: Int = 1,
        deliveries: DeliveryForm = .binary, receipts: DeliveryForm = .binary, after: Int64 = 0,
        onEntry: @escaping @Sendable (BenchFrame.Entry) -> Void = { _ in },
        onRefused: @escaping @Sendable (Components.Schemas.StreamRefusal) -> Void = { _ in }
    ) async throws -> BenchStream {
        let (signal, continuation) = AsyncStream<Void>.makeStream()
        var headers = HTTPHeaders()
        headers.add(name: .authorization, value: "Bearer \(user.token)")
        let pending = LockedBox<[Int64]>([])
        let sendWindow = SendWindow(size: window)
        let decoder = JSONDecoder()
        // Acknowledges every 50 entries, as they come.
        let take: @Sendable (BenchSocket, [BenchFrame.Entry]) -> Void = { socket, entries in
            guard !entries.isEmpty else { return }
            for entry in entries { onEntry(entry) }
            let batch: [Int64]? = pending.withLock { list in
                list += entries.map(\.cursor)
                guard list.count >= 50 else { return nil }
                defer { list = [] }
                return list
            }
            if let batch,
                let data = try? StreamCoding.encoder().encode(Components.Schemas.StreamRequest(cursors: batch))
            {
                socket.send(text: String(decoding: data, as: UTF8.self))
            }
        }
        // Entries several to a frame, as ConfidantKit asks for them; such a frame (or one large
        // entry) is more than NIO's default limit of 16 KiB.
        let socket = try await BenchSocket.connect(
            port: port,
            target:
                "/v1/stream?batched=true&deliveries=\(deliveries.rawValue)&receipts=\(receipts.rawValue)&after=\(after)",
            headers: headers,
            maximumFrameBytes: 1 << 23, from: source, on: group,
            onText: { socket, text in
                guard let frame = BenchFrame.scan(text) ?? (try? decoder.decode(BenchFrame.self, from: Data(text.utf8)))
                else { return }
                // The stream opens with a challenge that the device's key signs.
                if let challenge = frame.challenge.flatMap({ Data(base64Encoded: $0) }),
                    let proof = try? StreamCoding.encoder().encode(
                        Components.Schemas.StreamRequest(
                            answering: .init(challenge),
                            as: DeviceAddress(userID: user.id, deviceID: user.identity.deviceID),
                            identity: user.identity))
                {
                    socket.send(text: String(decoding: proof, as: UTF8.self))
                }
                if frame.caughtUp == true { continuation.yield() }
                if frame.receipt != nil { sendWindow.release() }
                if let refused = frame.refused {
                    onRefused(refused)
                    sendWindow.release()
                }
                take(socket, (frame.entry.map { [$0] } ?? []) + (frame.entries ?? []))
            },
            onBinary: { socket, buffer in
                if let count = BenchFrame.receiptCount(binary: buffer) {
                    for _ in 0..<count { sendWindow.release() }
                    return
                }
                take(socket, BenchFrame.scan(binary: buffer) ?? [])
            })
        return BenchStream(socket: socket, caughtUpSignal: signal, window: sendWindow)
    }

    func caughtUp() async throws {
        for await _ in caughtUpSignal { return }
        throw ValidationError("A stream closed before it caught up.")
    }

    /// Sends a frame once fewer than `window` sends wait for their receipt.
    func send(frame: BenchSendFrame) async throws {
        await window.acquire()
        switch frame {
        case .text(let text): socket.send(text: text)
        case .binary(let bytes): socket.send(binary: bytes)
        }
    }

    /// Sends `frames` from the socket's event loop — `window` of them at first, then one as each
    /// receipt (or refusal) arrives — and returns when the last has its receipt. Without a task
    /// resumed per send and per receipt, the generator needs less of the two cores it shares with
    /// the relay; ejabberd's client (an asyncio loop) sends the same way. `stamp` runs just before
    /// each send.
    func pump(_ frames: [(id: UUID, frame: BenchSendFrame)], stamp: @escaping @Sendable (UUID) -> Void) async {
        guard !frames.isEmpty else { return }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let pump = SendPump(frames: frames, window: window.size, socket: socket, stamp: stamp, done: done)
            window.divert(to: pump)
            socket.eventLoop.execute { pump.fill() }
        }
    }

    /// Returns when every send has its receipt.
    func drained() async throws {
        await window.waitUntilIdle()
    }

    func close() async { await socket.close() }
}

/// The parts of a `StreamFrame` the generator needs: decoding each envelope (base64 into bytes)
/// would be its largest cost and tell it nothing it does not know.
struct BenchFrame: Decodable {
    struct Entry: Decodable {
        let cursor: Int64
        let messageId: String?
        /// `messageId` as a UUID, when `scan` read it.
        var id: UUID? = nil

        /// The message id, however the frame was read.
        var messageID: UUID? { id ?? messageId.flatMap(UUID.init(uuidString:)) }
    }

    struct Receipt: Decodable {
        let messageId: String
    }

    /// The cursors and message ids of a binary delivery frame (docs/PROTOCOL.md §7.3), without
    /// copying its envelopes; nil if it is not one.
    static func scan(binary buffer: ByteBuffer) -> [Entry]? {
        var buffer = buffer
        guard buffer.readInteger(as: UInt8.self) == StreamDeliveryFrame.version,
            let count = buffer.readInteger(as: UInt16.self)
        else { return nil }
        var entries: [Entry] = []
        entries.reserveCapacity(Int(count))
        for _ in 0..<count {
            guard let cursor = buffer.readInteger(as: Int64.self), buffer.readSlice(length: 8 + 32) != nil,
                let id = buffer.readBytes(length: 16), let length = buffer.readInteger(as: UInt32.self),
                buffer.readSlice(length: Int(length)) != nil
            else { return nil }
            let uuid = UUID(
                uuid: (
                    id[0], id[1], id[2], id[3], id[4], id[5], id[6], id[7], id[8], id[9], id[10], id[11], id[12],
                    id[13], id[14], id[15]
                ))
            entries.append(Entry(cursor: cursor, messageId: nil, id: uuid))
        }
        return buffer.readableBytes == 0 ? entries : nil
    }

    /// How many receipts a binary receipt frame (docs/PROTOCOL.md §7.4) holds; nil if it is not
    /// one. The generator only counts them: each frees a place in the sender's window.
    static func receiptCount(binary buffer: ByteBuffer) -> Int? {
        guard buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) == StreamReceiptFrame.kind,
            let count = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt16.self),
            buffer.readableBytes == 3 + Int(count) * StreamReceiptFrame.Receipt.size
        else { return nil }
        return Int(count)
    }

    var challenge: String?
    var entry: Entry?
    var entries: [Entry]?
    var caughtUp: Bool?
    var receipt: Receipt?
    var refused: Components.Schemas.StreamRefusal?

    /// The two frames that come once per message, entries and receipts, read by their layout
    /// (the relay writes them with `StreamFrameText`) instead of through `JSONDecoder`, which
    /// scanned every envelope's base64 and was a quarter of the generator's CPU (perf). Their
    /// bytes are read directly: Foundation's `range(of:)` and `UUID(uuidString:)` (sscanf) were
    /// another tenth. The generator shares the machine's two cores with the relay; ejabberd's
    /// client reads its stanzas as plainly. Anything else, or a layout that differs: nil, and
    /// `JSONDecoder` reads it.
    static func scan(_ text: String) -> BenchFrame? {
        var text = text
        return text.withUTF8 { bytes -> BenchFrame? in
            if bytes.starts(with: receiptPrefix) {
                let start = receiptPrefix.count
                guard bytes.count >= start + 36 else { return nil }
                return BenchFrame(
                    receipt: Receipt(messageId: String(decoding: bytes[start..<start + 36], as: UTF8.self)))
            }
            if bytes.starts(with: entryPrefix) {
                guard let (entry, _) = scanEntry(bytes, from: entryPrefix.count - cursorKey.count) else { return nil }
                return BenchFrame(entry: entry)
            }
            // `{"entries":[{"cursor":…},…]}`: base64 and UUIDs hold no `{`, so each entry starts at
            // the next `{"cursor":`.
            guard bytes.starts(with: entriesPrefix) else { return nil }
            var entries: [Entry] = []
            var index = entriesPrefix.count - 1
            while index < bytes.count, bytes[index] != UInt8(ascii: "]") {
                guard let (entry, end) = scanEntry(bytes, from: index + 1),
                    let next = find(objectEnd, in: bytes, from: end)
                else { return nil }
                entries.append(entry)
                index = next + objectEnd.count
            }
            return BenchFrame(entries: entries)
        }
    }

    /// The entry whose object starts at `start` (`{"cursor":N,…"messageId":"…"`), and where its
    /// message id ends.
    private static func scanEntry(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> (Entry, Int)? {
        guard bytes.count >= start + cursorKey.count,
            bytes[start..<start + cursorKey.count].elementsEqual(cursorKey)
        else { return nil }
        let digits = start + cursorKey.count
        var index = digits
        var cursor: Int64 = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            cursor = cursor &* 10 &+ Int64(bytes[index] - UInt8(ascii: "0"))
            index += 1
        }
        guard index > digits, let key = find(messageIDKey, in: bytes, from: index) else { return nil }
        let idStart = key + messageIDKey.count
        guard bytes.count >= idStart + 36, let id = uuid(bytes[idStart..<idStart + 36]) else { return nil }
        return (Entry(cursor: cursor, messageId: nil, id: id), idStart + 36)
    }

    private static let entryPrefix = Array(#"{"entry":{"cursor":"#.utf8)
    private static let entriesPrefix = Array(#"{"entries":["#.utf8)
    private static let cursorKey = Array(#"{"cursor":"#.utf8)
    /// An entry object's end: its envelope's closing quote and brace.
    private static let objectEnd = Array(#""}"#.utf8)
    private static let receiptPrefix = Array(#"{"receipt":{"messageId":""#.utf8)
    private static let messageIDKey = Array(#""messageId":""#.utf8)

    private static func find(_ needle: [UInt8], in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        var index = start
        while index <= bytes.count - needle.count {
            if bytes[index] == needle[0], bytes[index..<index + needle.count].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }

    /// A UUID in its 36-character form (8-4-4-4-12 hex digits, either case).
    static func uuid(_ text: Slice<UnsafeBufferPointer<UInt8>>) -> UUID? {
        guard text.count == 36 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 16)
        var nibbles = 0
        for (offset, character) in text.enumerated() {
            if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                guard character == UInt8(ascii: "-") else { return nil }
                continue
            }
            let value: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = character - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = character - UInt8(ascii: "A") + 10
            default: return nil
            }
            bytes[nibbles / 2] |= nibbles % 2 == 0 ? value << 4 : value
            nibbles += 1
        }
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}

/// `BenchStream.pump`'s state: which frame goes next and how many wait for their receipt. Used
/// on the socket's event loop (receipts are read there too).
final class SendPump: Sendable {
    private let frames: [(id: UUID, frame: BenchSendFrame)]
    private let window: Int
    private let socket: BenchSocket
    private let stamp: @Sendable (UUID) -> Void
    private let state: Mutex<(next: Int, inFlight: Int, done: CheckedContinuation<Void, Never>?)>

    init(
        frames: [(id: UUID, frame: BenchSendFrame)], window: Int, socket: BenchSocket,
        stamp: @escaping @Sendable (UUID) -> Void, done: CheckedContinuation<Void, Never>
    ) {
        self.frames = frames
        self.window = window
        self.socket = socket
        self.stamp = stamp
        state = Mutex((0, 0, done))
    }

    func answered() {
        state.withLock { $0.inFlight -= 1 }
        fill()
    }

    /// Sends until `window` wait; resumes the caller once all are sent and answered.
    func fill() {
        while true {
            let next: (id: UUID, frame: BenchSendFrame)? = state.withLock { state in
                guard state.inFlight < window, state.next < frames.count else { return nil }
                defer {
                    state.next += 1
                    state.inFlight += 1
                }
                return frames[state.next]
            }
            guard let next else { break }
            stamp(next.id)
            switch next.frame {
            case .text(let text): socket.send(text: text)
            case .binary(let bytes): socket.send(binary: bytes)
            }
        }
        let finished = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.next == frames.count, state.inFlight == 0 else { return nil }
            defer { state.done = nil }
            return state.done
        }
        finished?.resume()
    }
}

/// A counting semaphore for sends waiting for their receipt.
final class SendWindow: Sendable {
    private struct State {
        var available: Int
        let size: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>
    /// While a `SendPump` drives the sends, each receipt goes to it instead. (A class, not a
    /// closure: a closure in a `Mutex` is wrapped in two more reabstraction thunks by every
    /// `withLock`, so each receipt took longer than the one before.)
    private let diverted = Mutex<SendPump?>(nil)

    init(size: Int) { state = Mutex(State(available: max(1, size), size: max(1, size))) }

    var size: Int { state.withLock { $0.size } }

    /// From now on a receipt (or refusal) goes to `pump` instead of freeing a place.
    func divert(to pump: SendPump) {
        diverted.withLock { $0 = pump }
    }

    func acquire() async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
                guard state.available > 0 else {
                    state.waiters.append(continuation)
                    return false
                }
                state.available -= 1
                return true
            }
            if ready { continuation.resume() }
        }
    }

    func release() {
        if let pump = diverted.withLock({ $0 }) { return pump.answered() }
        let (waiter, idle) = state.withLock {
            state -> (CheckedContinuation<Void, Never>?, [CheckedContinuation<Void, Never>]) in
            if !state.waiters.isEmpty { return (state.waiters.removeFirst(), []) }
            state.available = min(state.size, state.available + 1)
            guard state.available == state.size else { return (nil, []) }
            defer { state.idleWaiters = [] }
            return (nil, state.idleWaiters)
        }
        waiter?.resume()
        for continuation in idle { continuation.resume() }
    }

    func waitUntilIdle() async {
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state in
                guard state.available == state.size else {
                    state.idleWaiters.append(continuation)
                    return false
                }
                return true
            }
            if idle { continuation.resume() }
        }
    }
}

/// This benchmark run as `relay-load child-relay`, a child process, so that the server's memory
/// and CPU time are its own.
final class ChildServer: Sendable {
    private let process: Process
    private let output: Pipe
    /// Held open while this process lives (see `init`).
    private let input: Pipe

    init(dataDirectory: URL, database: String?) throws {
        let process = Process()
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var arguments = ["child-relay", "--data-dir", dataDirectory.path]
        // A profiler to run the relay under (e.g. `heaptrack`), for a diagnosis: the CPU and
        // memory figures are then the profiler's process's, not the relay's.
        if let wrapper = ProcessInfo.processInfo.environment["CONFIDANT_BENCH_SERVER_WRAPPER"], !wrapper.isEmpty {
            process.executableURL = URL(fileURLWithPath: wrapper)
            arguments.insert(executable.path, at: 0)
        } else {
            process.executableURL = executable
        }
        if let database { arguments += ["--database", database] }
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        // The child's standard input: only this process holds its writing end, so the child
        // reads its end when this process ends, however it ends (killed, or a crash), and stops
        // itself (`ChildRelayCommand.exitWithParentVariable`): a relay left behind took CPU from
        // the measurements that followed. An environment variable, not an option, so that an
        // older build run through the wrapper still starts.
        let input = Pipe()
        process.standardInput = input
        var environment = ProcessInfo.processInfo.environment
        environment[ChildRelayCommand.exitWithParentVariable] = "1"
        process.environment = environment
        try process.run()
        self.process = process
        self.output = output
        self.input = input
    }

    func waitForPort() throws -> Int {
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            guard !byte.isEmpty else { throw ValidationError("The child relay exited before it listened.") }
            line += byte
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: "127.0.0.1:"),
            let port = Int(text[range.upperBound...].prefix(while: \.isNumber))
        else {
            throw ValidationError("Unexpected first line from the child relay: \(text)")
        }
        return port
    }

    /// The server's CPU time by kind of thread, from /proc: its write connection's thread (NIO's
    /// thread pool of one, "TP-#0": the one stage every send and acknowledgement passes, so the
    /// rate it can keep up bounds the relay's), its event loops ("NIO-…"), and all the others.
    func threadCPUSeconds() -> (writer: Double, eventLoops: Double, other: Double) {
        let task = "/proc/\(process.processIdentifier)/task"
        var result = (writer: 0.0, eventLoops: 0.0, other: 0.0)
        for thread in (try? FileManager.default.contentsOfDirectory(atPath: task)) ?? [] {
            guard let stat = try? String(contentsOfFile: "\(task)/\(thread)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
            else { continue }
            let name = stat[stat.index(after: open)..<close]
            let seconds = Self.cpuSeconds(stat: stat, after: close)
            if name == "TP-#0" {
                result.writer += seconds
            } else if name.hasPrefix("NIO-") {
                result.eventLoops += seconds
            } else {
                result.other += seconds
            }
        }
        return result
    }

    /// utime + stime of a `stat` line whose command name ends at `close`.
    private static func cpuSeconds(stat: String, after close: String.Index) -> Double {
        // Fields after the command name: state is field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// User plus system CPU time the server has used, from /proc.
    func cpuSeconds() -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        return Self.cpuSeconds(stat: stat, after: close)
    }

    /// User plus system CPU time this process (the generator) has used.
    static func ownCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// Context switches of this process's threads, voluntary (a thread waiting) and involuntary
    /// (preempted), those of threads that ended included.
    static func ownContextSwitches() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_nvcsw + usage.ru_nivcsw
    }

    /// Current and peak resident memory in bytes, from /proc.
    func memory() -> (current: Int, peak: Int) {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        else { return (0, 0) }
        func kilobytes(_ key: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else { return 0 }
            return (Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0)
                * 1024
        }
        return (kilobytes("VmRSS:"), kilobytes("VmHWM:"))
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}

/// A mutex that closures can share (a `Mutex` itself cannot be captured by escaping closures).
final class LockedBox<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: sending Value) { mutex = Mutex(value) }

    func withLock<Result>(_ body: (inout sending Value) throws -> sending Result) rethrows -> sending Result {
        try mutex.withLock(body)
    }
}
