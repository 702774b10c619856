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

    /// One run, phase by phase: sign-up, the shapes that load the relay before the clock starts
    /// (idle streams, mailbox backlogs), envelopes sealed ahead, receivers and senders connected,
    /// then the timed sending and delivery.
    private func measure(
        port: Int, server: ChildServer, outbox: URL, databasePath: String, http: HTTPClient,
        eventLoops: MultiThreadedEventLoopGroup
    ) async throws -> BenchResult {
        guard let base = URL(string: "http://127.0.0.1:\(port)/v1") else { throw ValidationError("Bad port \(port).") }
        let client = { (token: String?) in
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
        let (held, idleRSS) = try await holdIdleStreams(
            port: port, server: server, client: client, outbox: outbox, databasePath: databasePath, on: eventLoops)
        let resumeAfter = try seedBacklog(users, databasePath: databasePath)
        let batches = try sealBatches(users)
        let total = batches.count * (batches.first?.count ?? 0)
        let arrivals = Arrivals(expected: total)

        progress("connecting \(pairs) receivers")
        var receivers: [BenchStream] = []
        for pair in 0..<pairs {
            receivers.append(
                try await BenchStream.connect(
                    port: port, user: users[2 * pair + 1], on: eventLoops, deliveries: deliveries, after: resumeAfter,
                    onEntry: { entry in entry.messageID.map(arrivals.arrived) }))
        }
        for stream in receivers { try await stream.caughtUp() }
        let refusals = LockedBox<[String]>([])
        let senders = try await connectSenders(users, port: port, refusals: refusals, on: eventLoops)

        progress("sending \(total) messages over \(transport.rawValue)")
        let started = ContinuousClock.now
        let serverCPUBefore = server.cpuSeconds()
        let threadsBefore = server.threadCPUSeconds()
        let generatorCPUBefore = ChildServer.ownCPUSeconds()
        try await send(batches, users: users, senders: senders, client: client, arrivals: arrivals)
        if let refused = refusals.withLock({ $0.first }) {
            throw ValidationError("The server refused \(refusals.withLock { $0.count }) sends, the first: \(refused)")
        }
        let sentElapsed = ContinuousClock.now - started
        guard await arrivals.complete(quietFor: .seconds(15)) else {
            throw ValidationError(
                "Only \(arrivals.count) of \(total) messages were delivered; nothing arrived for 15 s.")
        }
        let elapsed = ContinuousClock.now - started
        let serverCPU = server.cpuSeconds() - serverCPUBefore
        let threads = server.threadCPUSeconds()
        let generatorCPU = ChildServer.ownCPUSeconds() - generatorCPUBefore
        let peakDuringRun = server.memory().peak
        for stream in receivers + senders + held { await stream.close() }

        let latency = arrivals.latencies()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let sendSeconds = Double(sentElapsed.components.seconds) + Double(sentElapsed.components.attoseconds) / 1e18
        return BenchResult(
            database: database == nil ? "sqlite" : "postgresql", transport: transport.rawValue,
            deliveries: deliveries.rawValue, receipts: transport == .http ? nil : receipts.rawValue, pairs: pairs,
            messages: total,
            targetRate: rate, persistedPerSecond: Double(total) / sendSeconds,
            deliveredPerSecond: Double(total) / seconds,
            p50Milliseconds: latency.percentile(0.50), p99Milliseconds: latency.percentile(0.99),
            maxMilliseconds: latency.sorted.last ?? 0,
            serverCPUMicrosecondsPerMessage: serverCPU / Double(total) * 1e6,
            writerCPUMicrosecondsPerMessage: (threads.writer - threadsBefore.writer) / Double(total) * 1e6,
            eventLoopCPUMicrosecondsPerMessage: (threads.eventLoops - threadsBefore.eventLoops) / Double(total) * 1e6,
            generatorCPUMicrosecondsPerMessage: generatorCPU / Double(total) * 1e6,
            serverPeakRSSMiB: Double(peakDuringRun) / 1_048_576, idleConnections: idle,
            serverRSSWithIdleMiB: idleRSS.map { Double($0) / 1_048_576 },
            lost: total - arrivals.count, duplicated: arrivals.duplicates)
    }

    /// The idle-stream shape: `--idle` accounts seeded into the relay's database, each holding a
    /// stream open through the run; the relay's RSS with them open.
    private func holdIdleStreams(
        port: Int, server: ChildServer, client: (String?) -> Client, outbox: URL, databasePath: String,
        on eventLoops: MultiThreadedEventLoopGroup
    ) async throws -> (streams: [BenchStream], rss: Int?) {
        guard idle > 0 else { return ([], nil) }
        let template = try await BenchUser.make(index: pairs * 2, client: client, outbox: outbox)
        progress("seeding \(idle) accounts into the relay's database")
        let accounts = try BenchSeed.accounts(idle, like: template, in: databasePath)
        let addresses = sourceAddresses ?? (idle / 20_000 + 1)
        progress("opening \(idle) idle streams from \(addresses) source address(es)")
        let held = try await Self.open(accounts, port: port, addresses: addresses, on: eventLoops)
        try await Task.sleep(for: .seconds(1))
        return (held, server.memory().current)
    }

    /// The backlog shape: `--backlog` unread entries in each receiver's mailbox; returns the cursor
    /// the receivers resume after (0 for none).
    private func seedBacklog(_ users: [BenchUser], databasePath: String) throws -> Int64 {
        guard backlog > 0 else { return 0 }
        progress("seeding \(backlog) unread entries into each of \(pairs) receivers' mailboxes")
        let receivers = (0..<pairs).map { users[2 * $0 + 1] }
        if let database {
            return try BenchSeed.backlog(backlog, for: receivers, from: users[0], postgres: database)
        }
        return try BenchSeed.backlog(backlog, for: receivers, from: users[0], in: databasePath)
    }

    /// One message to send, sealed and (for the stream) encoded ahead of time: the generator
    /// shares the server's cores, and neither is what is measured.
    private typealias Sealed = (id: UUID, body: Components.Schemas.MessageBatch, frame: BenchSendFrame)

    /// Each pair's messages, sealed.
    private func sealBatches(_ users: [BenchUser]) throws -> [[Sealed]] {
        progress("sealing \(messages) envelopes")
        let perPair = messages / pairs
        let frameEncoder = StreamCoding.encoder()
        return try (0..<pairs).map { pair in
            let sender = users[2 * pair]
            let receiver = users[2 * pair + 1]
            return try (0..<perPair).map { index in
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
                    switch transport {
                    case .stream: .binary(try StreamSendFrame(envelopes: [envelope.serialized]).serialized())
                    case .jsonStream:
                        .text(
                            String(
                                decoding: try frameEncoder.encode(Components.Schemas.StreamRequest(send: body)),
                                as: UTF8.self))
                    case .http: .text("")
                    }
                return (id, body, frame)
            }
        }
    }

    /// The senders' own streams, caught up (none over HTTP); refusals are collected.
    private func connectSenders(
        _ users: [BenchUser], port: Int, refusals: LockedBox<[String]>, on eventLoops: MultiThreadedEventLoopGroup
    ) async throws -> [BenchStream] {
        guard transport != .http else { return [] }
        progress("connecting \(pairs) senders")
        var senders: [BenchStream] = []
        for pair in 0..<pairs {
            senders.append(
                try await BenchStream.connect(
                    port: port, user: users[2 * pair], on: eventLoops, window: window, receipts: receipts,
                    onRefused: { refused in refusals.withLock { $0.append("\(refused.error): \(refused.message)") } }))
        }
        for stream in senders { try await stream.caughtUp() }
        return senders
    }

    /// Every pair sends its batch: as fast as the relay answers (from the event loop as receipts
    /// come), or paced to `--rate`, over the stream or one HTTP request each.
    private func send(
        _ batches: [[Sealed]], users: [BenchUser], senders: [BenchStream], client: (String?) -> Client,
        arrivals: Arrivals
    ) async throws {
        let interval = rate.map { Duration.seconds(Double(pairs) / $0) }
        let transport = transport
        try await withThrowingTaskGroup(of: Void.self) { group in
            for pair in 0..<pairs {
                let sender = client(users[2 * pair].token)
                let stream = senders.isEmpty ? nil : senders[pair]
                let batch = batches[pair]
                group.addTask {
                    if interval == nil, let stream {
                        await stream.pump(batch.map { ($0.id, $0.frame) }, stamp: arrivals.sent)
                        return
                    }
                    var next = ContinuousClock.now
                    for (id, body, frame) in batch {
                        if let interval {
                            try await Task.sleep(until: next, clock: .continuous)
                            next += interval
                        }
                        arrivals.sent(id)
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
    }

    private func progress(_ text: String) { BenchOutput.progress(text) }

    /// Streams for `accounts`, caught up, from 127.0.0.2 … 127.0.0.(1 + `addresses`) in turn; at
    /// most 256 connecting at a time, and 48 per address (the relay keeps 64 unproven streams an
    /// address, `UnprovenStreams`).
    private static func open(
        _ accounts: [BenchUser], port: Int, addresses: Int, on group: MultiThreadedEventLoopGroup
    ) async throws -> [BenchStream] {
        let sources = (0..<max(1, addresses)).map { "127.0.0.\(2 + $0 % 250)" }
        return try await withThrowingTaskGroup(of: BenchStream.self) { tasks in
            var streams: [BenchStream] = []
            streams.reserveCapacity(accounts.count)
            for (index, account) in accounts.enumerated() {
                if index >= min(256, 48 * sources.count), let stream = try await tasks.next() {
                    streams.append(stream)
                }
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

/// When each message was sent and when it arrived: every id counts once, another copy of one is a
/// duplicate (relay.sh's runs check both).
final class Arrivals: Sendable {
    private struct State {
        var sentAt: [UUID: ContinuousClock.Instant] = [:]
        var latencies: [Double] = []
        var seen: Set<UUID> = []
        var duplicates = 0
    }

    private let state = Mutex(State())
    private let expected: Int
    private let done: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation

    init(expected: Int) {
        self.expected = expected
        (done, signal) = AsyncStream<Void>.makeStream()
    }

    @Sendable func sent(_ id: UUID) {
        let now = ContinuousClock.now
        state.withLock { $0.sentAt[id] = now }
    }

    @Sendable func arrived(_ id: UUID) {
        let now = ContinuousClock.now
        let count = state.withLock { state -> Int? in
            guard let start = state.sentAt[id] else { return nil }
            guard state.seen.insert(id).inserted else {
                state.duplicates += 1
                return nil
            }
            let elapsed = now - start
            state.latencies.append(
                Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
            return state.latencies.count
        }
        if count == expected { signal.yield() }
    }

    var count: Int { state.withLock { $0.seen.count } }
    var duplicates: Int { state.withLock { $0.duplicates } }

    /// Whether every message arrived; false once nothing has arrived for `quiet`.
    func complete(quietFor quiet: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in self.done { return true }
                return false
            }
            group.addTask {
                var last = -1
                while true {
                    try? await Task.sleep(for: quiet)
                    let count = self.state.withLock { $0.latencies.count }
                    if count == last || Task.isCancelled { return false }
                    last = count
                }
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// The latencies in milliseconds, sorted.
    func latencies() -> (sorted: [Double], percentile: (Double) -> Double) {
        let sorted = state.withLock { $0.latencies }.sorted()
        return (sorted, { p in sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] })
    }
}
