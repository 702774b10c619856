import ArgumentParser
import ConfidantCrypto
import ConfidantKit
import Foundation
import Observation
import Synchronization

/// Where `relay-load kit` runs its messengers' concurrency (`EventLoopConcurrency`).
enum KitConcurrency: String, ExpressibleByArgument, Sendable {
    case eventLoops = "event-loops"
    case pool
}

/// `relay-load kit`: the client's real path. Two ConfidantKit messengers (their own profiles,
/// local stores and Double Ratchet sessions) on a child relay; one sends with `Messenger.send`,
/// as the app and the CLI do, from `--window` callers at once, while the other is live and
/// receives. Everything `run` leaves out is in: sealing, the local stores of both sides, key
/// look-ups, receipts, decryption. Sealing's share is measured apart in the same process, on a
/// session of its own, for the same message.
struct KitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kit", abstract: "Send through ConfidantKit from one messenger to another on a child relay.")

    @Option(help: "Messages to send.") var messages = 1_000
    @Option(help: "Callers of Messenger.send at once.") var window = 1
    @Option(
        help:
            "Send at this many messages per second, each send started on time whether or not the one before returned (open loop), instead of as fast as the callers go."
    )
    var rate: Double?
    @Flag(
        inversion: .prefixedNo,
        help: "Whether the receiver has the chat open (a ChatViewModel following its store, marking what arrives read)."
    )
    var openChat = true
    @Option(help: "Passed to `confidant serve --database` (default: SQLite in a temporary directory).") var database:
        String?
    @Option(
        help:
            "Where the messengers' Swift concurrency runs: `event-loops` (on the connections' event loops, as `confidant chat` and `send` run it) or `pool` (Swift's own thread pool)."
    )
    var concurrency: KitConcurrency = .eventLoops
    @Flag(help: "Print one JSON line instead of the table.") var json = false

    func run() async throws {
        guard messages > 0, window > 0 else { throw ValidationError("Need at least one message and one caller.") }
        if let rate, !(rate > 0 && rate <= 10_000) {
            throw ValidationError("--rate must be above 0 and at most 10,000.")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-bench-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try ChildServer(dataDirectory: directory, database: database)
        defer { server.stop() }
        let port = try server.waitForPort()
        guard let url = URL(string: "http://127.0.0.1:\(port)") else { throw ValidationError("Bad port \(port).") }
        let outbox = directory.appendingPathComponent("outbox")

        progress("registering two messengers")
        let alice = try await KitPeer.register("alice", server: url, in: directory, outbox: outbox)
        let bob = try await KitPeer.register("bob", server: url, in: directory, outbox: outbox)
        let bobContact = try await alice.messenger.contact(email: bob.email)
        let received = KitArrivals(expected: messages + 1)
        let events = await bob.messenger.events()
        let listening = Task {
            for await event in events {
                if case .message(let message) = event, message.direction == .incoming, let text = message.text {
                    received.arrived(text)
                }
            }
        }
        await alice.messenger.startLive()
        await bob.messenger.startLive()
        defer { listening.cancel() }
        // Bob has the chat with Alice open: the same view model the app renders, following the store.
        let aliceContact = Contact(id: await alice.messenger.me, email: alice.email, displayName: "alice")
        let chat = await OpenChat(messenger: bob.messenger, peer: aliceContact)
        if openChat { await chat.start() }
        defer { Task { await chat.stop() } }
        // The first message starts the session (a prekey bundle, PQXDH); it is not measured.
        let sentAt = KitSendTimes()
        sentAt.stamp("warm-up")
        _ = try await alice.messenger.send("warm-up", to: bobContact)
        guard await received.wait(for: 1, within: .seconds(30)) else {
            throw ValidationError("The warm-up message did not arrive within 30 s.")
        }

        progress("sending \(messages) messages through Messenger.send, \(window) at a time")
        let serverCPUBefore = server.cpuSeconds()
        let clientCPUBefore = ChildServer.ownCPUSeconds()
        let switchesBefore = ChildServer.ownContextSwitches()
        let started = ContinuousClock.now
        let next = LockedBox(0)
        let failures = LockedBox(0)
        // Discarding: a child is freed as it ends. In the open loop nothing awaits the children
        // one by one, and a plain group kept each finished send's task (about 12 KiB of its
        // stack allocator, heaptrack) until the last: 48 MiB over 4,000 messages.
        await withDiscardingTaskGroup { group in
            if let rate {
                // Open loop: message i starts at i / rate, in a task of its own.
                for index in 0..<messages {
                    try? await Task.sleep(until: started + .seconds(Double(index) / rate), clock: .continuous)
                    let text = "benchmark message \(index) " + String(repeating: "x", count: 200)
                    sentAt.stamp(text)
                    group.addTask {
                        switch (try? await alice.messenger.send(text, to: bobContact))?.status {
                        case nil, .failed(_)?: failures.withLock { $0 += 1 }
                        default: break
                        }
                    }
                }
                return
            }
            for _ in 0..<window {
                group.addTask { [messages] in
                    while true {
                        let index = next.withLock { next in
                            defer { next += 1 }
                            return next
                        }
                        guard index < messages else { return }
                        let text = "benchmark message \(index) " + String(repeating: "x", count: 200)
                        sentAt.stamp(text)
                        // With several callers one send may return `pending` while another's
                        // delivery of the outbox takes it: only a failure counts.
                        switch (try? await alice.messenger.send(text, to: bobContact))?.status {
                        case nil, .failed(_)?: failures.withLock { $0 += 1 }
                        default: break
                        }
                    }
                }
            }
        }
        let complete = await received.wait(for: messages + 1, within: .seconds(60))
        let shown = openChat ? await chat.arrivals.wait(for: messages + 1, within: .seconds(30)) : false
        let elapsed = ContinuousClock.now - started
        let serverCPU = server.cpuSeconds() - serverCPUBefore
        let clientCPU = ChildServer.ownCPUSeconds() - clientCPUBefore
        let switches = ChildServer.ownContextSwitches() - switchesBefore
        let peak = server.memory().peak
        await alice.messenger.stopLive()
        await bob.messenger.stopLive()
        let stored = try await bob.messenger.history(with: alice.messenger.me, limit: messages + 10).count

        progress("sealing and opening \(messages) messages on a session of their own")
        let crypto = try MessageCryptoCost.measure(messages: messages)

        let latencies = received.latencies(from: sentAt).sorted()
        let inChat = chat.arrivals.latencies(from: sentAt).sorted()
        func percentile(_ p: Double, of latencies: [Double] = latencies) -> Double {
            latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let result = KitResult(
            database: database == nil ? "sqlite" : "postgresql", window: window, messages: messages,
            targetRate: rate, deliveredPerSecond: Double(messages) / seconds, p50Milliseconds: percentile(0.5),
            p99Milliseconds: percentile(0.99), chatP50Milliseconds: percentile(0.5, of: inChat),
            chatP99Milliseconds: percentile(0.99, of: inChat), shownInChat: shown ? messages : inChat.count,
            serverCPUMicrosecondsPerMessage: serverCPU / Double(messages) * 1e6,
            generatorCPUMicrosecondsPerMessage: clientCPU / Double(messages) * 1e6,
            sealMicrosecondsPerMessage: crypto.seal * 1e6, openMicrosecondsPerMessage: crypto.open * 1e6,
            clientContextSwitchesPerMessage: Double(switches) / Double(messages),
            serverPeakRSSMiB: Double(peak) / 1_048_576,
            notSent: failures.withLock { $0 },
            lost: complete ? 0 : messages + 1 - received.count, duplicated: received.duplicated,
            storedByReceiver: stored)
        try BenchOutput.report(result, table: result.table, json: json)
        await alice.remove()
        await bob.remove()
    }

    private func progress(_ text: String) { BenchOutput.progress(text) }
}

/// A messenger registered on the child relay, with a profile directory of its own.
struct KitPeer: Sendable {
    let messenger: Messenger
    let email: String
    let profile: URL

    static func register(_ name: String, server: URL, in directory: URL, outbox: URL) async throws -> KitPeer {
        let profile = directory.appendingPathComponent("profile-\(name)")
        let email = "\(name)-\(UUID().uuidString.prefix(8).lowercased())@example.com"
        // The profile's key file uses scrypt's testing cost: opening it is not what is measured.
        let storage = ProfileStorage(directory: profile, keyParameters: .testing)
        let messenger = try await Messenger.register(
            storage, passphrase: "benchmark profile passphrase", server: server, email: email,
            password: "benchmark password \(name)", displayName: name,
            answer: { step in
                guard step.method == .emailCode else {
                    throw ValidationError("Unexpected sign-in step \(step.method).")
                }
                return try BenchUser.mailedCode(to: email, in: outbox)
            }, allowInsecureHTTP: true)
        return KitPeer(messenger: messenger, email: email, profile: profile)
    }

    func remove() async {
        await messenger.stopLive()
        try? FileManager.default.removeItem(at: profile)
    }
}

/// When each message's text was handed to `Messenger.send`.
final class KitSendTimes: Sendable {
    private let times = Mutex<[String: ContinuousClock.Instant]>([:])

    func stamp(_ text: String) {
        let now = ContinuousClock.now
        times.withLock { $0[text] = now }
    }

    func time(of text: String) -> ContinuousClock.Instant? { times.withLock { $0[text] } }
}

/// The texts the receiver stored, when, and how many came twice.
final class KitArrivals: Sendable {
    private struct State {
        var arrivals: [String: ContinuousClock.Instant] = [:]
        var duplicated = 0
        var waiter: (count: Int, continuation: CheckedContinuation<Bool, Never>)?
    }
    private let state = Mutex(State())
    let expected: Int

    init(expected: Int) { self.expected = expected }

    func arrived(_ text: String) {
        let now = ContinuousClock.now
        let resume = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            if state.arrivals[text] != nil {
                state.duplicated += 1
                return nil
            }
            state.arrivals[text] = now
            guard let waiter = state.waiter, state.arrivals.count >= waiter.count else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        resume?.resume(returning: true)
    }

    var count: Int { state.withLock { $0.arrivals.count } }
    func has(_ text: String) -> Bool { state.withLock { $0.arrivals[text] != nil } }
    var duplicated: Int { state.withLock { $0.duplicated } }

    /// Whether `count` texts arrived within `limit`.
    func wait(for count: Int, within limit: Duration) async -> Bool {
        let timeout = Task { [weak self] in
            try? await Task.sleep(for: limit)
            self?.giveUp()
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if state.arrivals.count >= count { return true }
                state.waiter = (count, continuation)
                return false
            }
            if done { continuation.resume(returning: true) }
        }
    }

    private func giveUp() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            defer { state.waiter = nil }
            return state.waiter?.continuation
        }
        waiter?.resume(returning: false)
    }

    /// Milliseconds from each send to its arrival.
    func latencies(from sent: KitSendTimes) -> [Double] {
        state.withLock { $0.arrivals }.compactMap { text, arrival in
            guard text != "warm-up", let start = sent.time(of: text) else { return nil }
            let elapsed = arrival - start
            return Double(elapsed.components.seconds) * 1e3 + Double(elapsed.components.attoseconds) / 1e15
        }
    }
}

/// What the end-to-end cryptography alone costs a message: sealing the same text as ConfidantKit
/// seals it for one device (a chat payload in a v2 session envelope), and the receiver's opening
/// of it (parsing the envelope, the ratchet's symmetric step, the payload), on a session of
/// their own that has been answered once, as a chat's is: no start rides along. Neither touches
/// a store, a socket or a thread: it is the least any client's path must spend on a message.
struct MessageCryptoCost {
    /// Sealing's CPU seconds per message.
    let seal: Double
    /// Opening's CPU seconds per message.
    let open: Double

    static func measure(messages: Int) throws -> MessageCryptoCost {
        let alice = try PrivateIdentity.generate()
        let bob = try PrivateIdentity.generate()
        var alicePrekeys = try DevicePrekeys.generate()
        var bobPrekeys = try DevicePrekeys.generate()
        let upload = try bobPrekeys.upload(signedBy: bob, oneTimePrekeys: bobPrekeys.allOneTimePrekeys)
        let bundle = PrekeyBundle(
            deviceID: bob.deviceID, signedPrekey: upload.signedPrekey, kemPrekey: upload.kemPrekey,
            oneTimePrekey: upload.oneTimePrekeys.first)
        let aliceUser = UUID()
        let bobUser = UUID()
        var aliceSession = SessionRecord()
        var bobSession = SessionRecord()
        try aliceSession.start(from: alice, to: bob.publicIdentity, bundle: bundle)
        // The start, and an answer that ends it, before the clock: a chat's messages carry neither.
        let first = try aliceSession.seal(
            Data("hello".utf8), from: alice, senderUserID: aliceUser, to: bob.publicIdentity, recipientUserID: bobUser)
        _ = try bobSession.open(
            first, as: bob, recipientUserID: bobUser, from: alice.publicIdentity, prekeys: &bobPrekeys)
        let answer = try bobSession.seal(
            Data("hi".utf8), from: bob, senderUserID: bobUser, to: alice.publicIdentity, recipientUserID: aliceUser)
        _ = try aliceSession.open(
            answer, as: alice, recipientUserID: aliceUser, from: bob.publicIdentity, prekeys: &alicePrekeys)

        let payload = try ChatPayload(
            conversation: bobUser, text: "benchmark message 0 " + String(repeating: "x", count: 200)
        ).serialized
        var sealed: [Data] = []
        sealed.reserveCapacity(messages)
        let beforeSealing = ChildServer.ownCPUSeconds()
        for _ in 0..<messages {
            sealed.append(
                try aliceSession.seal(
                    payload, from: alice, senderUserID: aliceUser, to: bob.publicIdentity, recipientUserID: bobUser
                ).serialized)
        }
        let beforeOpening = ChildServer.ownCPUSeconds()
        for bytes in sealed {
            guard case .ratchet(let envelope) = try WireEnvelope(serialized: bytes) else {
                throw ValidationError("A sealed message did not parse back as a session envelope.")
            }
            let plaintext = try bobSession.open(
                envelope, as: bob, recipientUserID: bobUser, from: alice.publicIdentity, prekeys: &bobPrekeys)
            _ = try ChatPayload(serialized: plaintext)
        }
        let after = ChildServer.ownCPUSeconds()
        return MessageCryptoCost(
            seal: (beforeOpening - beforeSealing) / Double(messages), open: (after - beforeOpening) / Double(messages))
    }
}

struct KitResult: Codable {
    let database: String
    let window: Int
    let messages: Int
    let targetRate: Double?
    let deliveredPerSecond: Double
    /// Send called → stored by the receiver (its messenger's event: committed, and synced to disk
    /// before it is acknowledged to the relay).
    let p50Milliseconds: Double
    let p99Milliseconds: Double
    /// Send called → in the receiver's open chat (`ChatViewModel.messages`).
    let chatP50Milliseconds: Double
    let chatP99Milliseconds: Double
    let shownInChat: Int
    let serverCPUMicrosecondsPerMessage: Double
    /// Both messengers: they run in this one process (the name `run`'s generator has).
    let generatorCPUMicrosecondsPerMessage: Double
    /// Sealing alone (``MessageCryptoCost``), in CPU µs a message.
    let sealMicrosecondsPerMessage: Double
    /// Opening alone (``MessageCryptoCost``), in CPU µs a message.
    let openMicrosecondsPerMessage: Double
    /// Threads of both messengers' process put to sleep or preempted per message (`getrusage`):
    /// the hand-overs between threads that the CPU figures hide, and less noisy than they are.
    let clientContextSwitchesPerMessage: Double
    let serverPeakRSSMiB: Double
    let notSent: Int
    let lost: Int
    let duplicated: Int
    let storedByReceiver: Int

    var table: String {
        [
            "database            \(database)",
            "messages            \(messages) through Messenger.send, "
                + (targetRate.map { "\(Int($0)) per second (open loop)" } ?? "\(window) caller(s) at once"),
            "delivered           \(Int(deliveredPerSecond)) messages/s",
            String(
                format: "latency p50/p99     %.1f / %.1f ms (send called -> stored by the receiver)", p50Milliseconds,
                p99Milliseconds),
            String(
                format: "                    %.1f / %.1f ms (send called -> in the receiver's open chat, %d shown)",
                chatP50Milliseconds, chatP99Milliseconds, shownInChat),
            String(
                format:
                    "CPU per message     server %.0f µs, both clients %.0f µs (sealing alone %.0f µs, opening %.0f µs)",
                serverCPUMicrosecondsPerMessage, generatorCPUMicrosecondsPerMessage, sealMicrosecondsPerMessage,
                openMicrosecondsPerMessage),
            String(format: "context switches    %.1f per message (both clients)", clientContextSwitchesPerMessage),
            "not sent / lost / duplicated   \(notSent) / \(lost) / \(duplicated)",
            "stored by the receiver         \(storedByReceiver) (with the warm-up)",
        ].joined(separator: "\n")
    }
}

/// The receiver's chat with the sender, open as in the app: a `ChatViewModel` following the local
/// store, and when each message first shows in its `messages`.
@MainActor
final class OpenChat {
    let model: ChatViewModel
    nonisolated let arrivals = KitArrivals(expected: 0)
    private var following: Task<Void, Never>?

    init(messenger: Messenger, peer: Contact) {
        model = ChatViewModel(messenger: messenger, peer: peer)
    }

    func start() async {
        await model.load()
        following = Task { await model.run() }
        watch()
    }

    func stop() {
        following?.cancel()
    }

    /// Records what is new in `messages` now and after every change (Observation calls back
    /// before the change lands, so the check runs in the task that follows it).
    /// New lines come last: the scan goes back from the end to the first line it has seen. (It
    /// looked up all 200 lines' texts after every change, 0.1 ms of each message's measured time
    /// at 50 messages/s.)
    private func watch() {
        var new: [String] = []
        for message in model.messages.reversed() where message.direction == .incoming {
            guard let text = message.text else { continue }
            if arrivals.has(text) { break }
            new.append(text)
        }
        for text in new.reversed() { arrivals.arrived(text) }
        withObservationTracking {
            _ = model.messages
        } onChange: {
            Task { @MainActor in self.watch() }
        }
    }
}
