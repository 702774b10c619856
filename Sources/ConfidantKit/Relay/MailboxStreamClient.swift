import ConfidantAPI
import ConfidantCrypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization
import WebSocketKit

/// Where the realtime connection stands, for a status line.
public enum ConnectionState: Sendable, Equatable {
    case connecting
    /// Connected and caught up with everything stored on the server.
    case live
    /// Disconnected; the next attempt is after this delay.
    case waiting(retryIn: Duration, reason: String)
    case stopped
    /// The session ended (signed out, this device removed from another, the account deleted):
    /// nothing reconnects until the user logs in again.
    case signedOut
}

/// Keeps `/v1/stream` open: hands entries to `receive` (whatever arrived together, in order),
/// acknowledges what it stored once `sync` has it on disk, and after a drop reconnects with
/// exponential back-off (with jitter) and resumes after the stored cursor, so nothing is lost or
/// delivered twice. While connected, `sender` sends messages over the same socket.
struct MailboxStreamClient: Sendable {
    let serverURL: URL
    let token: String
    /// This device's key: the stream opens with a challenge it must sign.
    let identity: PrivateIdentity
    let address: DeviceAddress
    let sender: StreamSender
    /// What was stored and waits to be acknowledged, across connections.
    let held: HeldAcknowledgements
    var initialDelay: Duration = .milliseconds(250)
    var maximumDelay: Duration = .seconds(15)
    /// The most entries opened and stored in one transaction.
    static let batchLimit = 200

    /// What `receive` stored: the cursors to acknowledge, and the store's commit that holds them
    /// (to be synced first).
    typealias Received = (cursors: [Int64], commit: UInt64)

    /// Runs until the task is cancelled; throws only `sessionExpired` (after reporting `signedOut`).
    func run(
        cursor: @Sendable () async throws -> Int64,
        receive: @Sendable ([Components.Schemas.MailboxEntry]) async throws -> Received,
        sync: @escaping @Sendable (UInt64) async throws -> Void,
        unacknowledged: @escaping @Sendable () async throws -> [Int64],
        state: @Sendable (ConnectionState) async -> Void
    ) async throws {
        var delay = initialDelay
        while !Task.isCancelled {
            await state(.connecting)
            let reason: String
            do {
                reason = try await session(
                    after: cursor(), receive: receive, sync: sync, unacknowledged: unacknowledged,
                    connected: { delay = initialDelay }, state: state)
            } catch ConfidantKitError.sessionExpired {
                await sender.detach()
                await state(.signedOut)
                throw ConfidantKitError.sessionExpired
            } catch {
                reason = RelayClient.describe(error)
            }
            await sender.detach()
            if Task.isCancelled { break }
            let jittered = delay * Double.random(in: 0.8...1.2)
            await state(.waiting(retryIn: jittered, reason: reason))
            try? await Task.sleep(for: jittered)
            delay = min(delay * 2, maximumDelay)
        }
        await state(.stopped)
    }

    /// One connection, until it closes; returns why it closed.
    private func session(
        after cursor: Int64,
        receive: @Sendable ([Components.Schemas.MailboxEntry]) async throws -> Received,
        sync: @escaping @Sendable (UInt64) async throws -> Void,
        unacknowledged: @escaping @Sendable () async throws -> [Int64],
        connected: () -> Void,
        state: @Sendable (ConnectionState) async -> Void
    ) async throws -> String {
        let inbox = FrameInbox()
        let socket = try await connect(after: cursor, inbox: inbox)
        connected()
        defer { held.detach(inbox) }
        let encoder = StreamCoding.encoder()
        let acknowledgements = Acknowledging(held: held, inbox: inbox, socket: socket, sync: sync)
        defer { acknowledgements.cancelTimer() }
        func flush(_ pending: inout [Components.Schemas.MailboxEntry]) async throws {
            guard !pending.isEmpty else { return }
            let received = try await receive(pending)
            pending = []
            try await acknowledgements.stored(received)
        }
        let reason = try await withTaskCancellationHandler {
            // Whatever arrived together is taken at once, so a burst is opened and stored in a
            // few transactions instead of one per message.
            for await _ in inbox.signals {
                var pending: [Components.Schemas.MailboxEntry] = []
                for event in inbox.takeAll() {
                    switch event {
                    case .receipts(let receipts):
                        await sender.resolve(receipts)
                    case .acknowledge:
                        try await flush(&pending)
                        try await acknowledgements.now()
                    case .closed:
                        try await flush(&pending)
                        switch Self.relayCode(socket.closeCode) {
                        // The session ended, or this device's key is not the device's any more:
                        // reconnecting would be refused.
                        case .revoked?, .proofRefused?: throw ConfidantKitError.sessionExpired
                        case .proofLate?: return "this device's answer to the server's challenge came too late"
                        case nil: return Self.closedReason
                        }
                    case .frame(let frame):
                        if let challenge = frame.challenge {
                            let proof = try encoder.encode(
                                Components.Schemas.StreamRequest(answering: challenge, as: address, identity: identity))
                            // A send that fails found the socket closed: its close event
                            // follows and says why.
                            try? await socket.send(String(decoding: proof, as: UTF8.self))
                            // Sends go over this socket only once the proof is on it: the relay
                            // takes anything else first as a refused proof (4403), which signs
                            // the device out for good.
                            await sender.attach(socket, binarySendVersions: frame.binarySendVersions ?? [])
                            // Acknowledgements too, and first what the last connection stored
                            // and could not acknowledge.
                            acknowledgements.proofSent()
                            if held.needsSweep, let stranded = try? await unacknowledged() {
                                // Once per messenger (until it succeeds): what a process before
                                // this one stored and did not live to acknowledge.
                                held.swept(holding: stranded)
                            }
                            try await acknowledgements.now()
                        }
                        for entry in (frame.entry.map { [$0] } ?? []) + (frame.entries ?? []) {
                            pending.append(entry)
                            if pending.count >= Self.batchLimit {
                                try await flush(&pending)
                            }
                        }
                        if let receipt = frame.receipt { await sender.resolve(receipt) }
                        if let refused = frame.refused { await sender.resolve(refused) }
                        if frame.caughtUp == true {
                            try await flush(&pending)
                            await state(.live)
                        }
                    }
                }
                try await flush(&pending)
            }
            return Self.closedReason
        } onCancel: {
            _ = socket.close()
        }
        try? await socket.close()
        return reason
    }

    private static let closedReason = "the server closed the connection"

    /// `{"cursors":[N,…]}`, byte for byte as `JSONEncoder` writes the `StreamRequest` (the tests
    /// compare them), without its generic path: one per frame of acknowledgements, 0.5 % of both
    /// clients' CPU in `relay-load kit` (perf).
    static func acknowledgement(_ cursors: [Int64]) -> String {
        #"{"cursors":["# + cursors.map(String.init).joined(separator: ",") + "]}"
    }

    /// The relay's own reason for closing, if the close code is one of its codes.
    private static func relayCode(_ code: WebSocketErrorCode?) -> StreamCloseCode? {
        guard case .unknown(let raw)? = code else { return nil }
        return StreamCloseCode(rawValue: raw)
    }

    /// One connection's acknowledgements: what is stored is held (`HeldAcknowledgements`) and
    /// acknowledged a moment later, or at once once a frame's worth waits, after one sync.
    private final class Acknowledging {
        let held: HeldAcknowledgements
        let inbox: FrameInbox
        let socket: WebSocket
        let sync: @Sendable (UInt64) async throws -> Void
        private var timer: Task<Void, Never>?
        /// Nothing but the proof may go first: the relay takes any other frame as a refused
        /// proof, which signs the device out.
        private var proven = false

        init(
            held: HeldAcknowledgements, inbox: FrameInbox, socket: WebSocket,
            sync: @escaping @Sendable (UInt64) async throws -> Void
        ) {
            self.held = held
            self.inbox = inbox
            self.socket = socket
            self.sync = sync
        }

        func stored(_ received: Received) async throws {
            guard held.hold(received.cursors, commit: received.commit) < HeldAcknowledgements.frameLimit else {
                try await now()
                return
            }
            guard timer == nil else { return }
            let (delay, sleep, inbox) = (held.delay, held.sleep, inbox)
            timer = Task {
                do { try await sleep(delay) } catch { return }
                guard !Task.isCancelled else { return }
                inbox.put(.acknowledge)
            }
        }

        /// The proof is on the socket: acknowledgements may follow, and `stopLive` may ask for them.
        func proofSent() {
            proven = true
            held.attach(inbox)
        }

        /// Syncs what is held and acknowledges it, a frame of at most `frameLimit` cursors at a
        /// time. A frame that does not go (the connection closing) leaves its cursors held.
        func now() async throws {
            cancelTimer()
            defer { held.acknowledged() }
            guard proven else { return }
            while let (cursors, commit) = held.take() {
                do {
                    try await sync(commit)
                    try await socket.send(MailboxStreamClient.acknowledgement(cursors))
                } catch {
                    held.giveBack(cursors, commit: commit)
                    throw error
                }
            }
        }

        func cancelTimer() {
            timer?.cancel()
            timer = nil
        }
    }

    private func connect(after cursor: Int64, inbox: FrameInbox) async throws -> WebSocket {
        guard var components = URLComponents(url: serverURL, resolvingAgainstBaseURL: false) else {
            throw ConfidantKitError.invalidServerURL(serverURL.absoluteString)
        }
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        components.path = "/v1/stream"
        // Batched: a burst comes in a few frames instead of one per entry (docs/PROTOCOL.md §7);
        // binary: envelopes without base64 or JSON (§7.3), receipts several to a frame (§7.4). A
        // relay from before either ignores its parameter and sends text, which is read as well.
        components.queryItems = [
            URLQueryItem(name: "after", value: String(cursor)), URLQueryItem(name: "batched", value: "true"),
            URLQueryItem(name: "deliveries", value: "binary"), URLQueryItem(name: "receipts", value: "binary"),
        ]
        guard let url = components.string else { throw ConfidantKitError.invalidServerURL(serverURL.absoluteString) }
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: "Bearer \(token)")
        let group = MultiThreadedEventLoopGroup.singleton
        let promise = group.any().makePromise(of: WebSocket.self)
        var configuration = WebSocketClient.Configuration(tlsConfiguration: ServerTrust.tlsConfiguration)
        // A send frame carries up to 256 envelopes, base64, as the relay bounds it.
        configuration.maxFrameSize = 1 << 23
        do {
            try await WebSocket.connect(to: url, headers: headers, configuration: configuration, on: group) { socket in
                let decoder = StreamCoding.decoder()
                // Entries and receipts in the relay's own layout are read directly; anything else
                // goes through `JSONDecoder`. The callbacks come one at a time, on the socket's loop.
                let scanner = Mutex(StreamFrameScanner())
                socket.onText { _, text in
                    if let frame = scanner.withLock({ $0.frame(text) })
                        ?? (try? decoder.decode(Components.Schemas.StreamFrame.self, from: Data(text.utf8)))
                    {
                        inbox.put(.frame(frame))
                    }
                }
                socket.onBinary { socket, buffer in
                    do {
                        // The first byte says what the frame is: receipts (§7.4) or deliveries.
                        if buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) == StreamReceiptFrame.kind {
                            let frame = try StreamReceiptFrame(serialized: Data(buffer.readableBytesView))
                            inbox.put(.receipts(frame.receipts.map(\.messageReceipt)))
                            return
                        }
                        let frame = try StreamDeliveryFrame(serialized: Data(buffer.readableBytesView))
                        inbox.put(.frame(Components.Schemas.StreamFrame(entries: frame.entries.map(\.mailboxEntry))))
                    } catch {
                        // Closed rather than skipped: the client reconnects after the last entry
                        // it stored and gets this frame's entries again, where storing later
                        // ones first would move its cursor past them.
                        _ = socket.close(code: .unacceptableData)
                    }
                }
                socket.onClose.whenComplete { _ in inbox.put(.closed) }
                promise.succeed(socket)
            }.get()
        } catch let WebSocketClient.Error.invalidResponseStatus(head) where head.status == .unauthorized {
            promise.fail(ConfidantKitError.sessionExpired)
            throw ConfidantKitError.sessionExpired
        } catch {
            promise.fail(error)
            throw error
        }
        return try await promise.futureResult.get()
    }
}

/// Entries the live stream stored and has not acknowledged yet, and the store's commit that holds
/// the last of them: acknowledged together `delay` after the first, after one sync to disk for
/// all of them, instead of a sync and an acknowledgement for each batch. The relay keeps an entry
/// until it is acknowledged, and the receiver's clock is nobody's wait: what matters to the
/// sender (the receipt) and to the user (the message on screen) does not wait for this. Kept
/// across connections: what a dropped connection could not acknowledge goes on the next one;
/// `Messenger.stopLive` has it go before it closes. What a process that died held is found on the
/// relay by the next messenger's first connection (`MessageReceiver.unacknowledged`).
final class HeldAcknowledgements: Sendable {
    /// The most cursors one acknowledgement carries (the relay's limit).
    static let frameLimit = 1_000

    /// How long the first entry held waits for others. 100 ms, not 10: at a person's pace (50
    /// messages a second in `relay-load kit --rate 50`) 10 ms held one entry each time, a timer,
    /// an `fdatasync` and a frame per message on the receiver and a delete on the relay; with the
    /// background sync of sent messages also at 100 ms, both messengers' context switches per
    /// message fell from 35–39 to 22 and their CPU by 13–24 % (docs/BENCHMARKS.md, 2026-11-28).
    let delay: Duration
    /// Waits out the delay; tests wait for their own release instead.
    let sleep: @Sendable (Duration) async throws -> Void

    private struct State {
        var cursors: [Int64] = []
        var commit: UInt64 = 0
        var inbox: FrameInbox?
        var waiters: [CheckedContinuation<Void, Never>] = []
        var swept = false
    }
    private let state = Mutex(State())

    init(
        delay: Duration = .milliseconds(100),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.delay = delay
        self.sleep = sleep
    }

    /// How many cursors are held.
    var count: Int { state.withLock { $0.cursors.count } }

    /// Whether to look for what an earlier process left unacknowledged: until it was done once.
    fileprivate var needsSweep: Bool { state.withLock { !$0.swept } }

    /// Holds what the sweep found (on disk already: `MessageReceiver.unacknowledged` synced it).
    fileprivate func swept(holding cursors: [Int64]) {
        state.withLock { state in
            state.swept = true
            state.cursors += cursors
        }
    }

    /// Holds `cursors`, stored by `commit`; answers how many are held now.
    fileprivate func hold(_ cursors: [Int64], commit: UInt64) -> Int {
        state.withLock { state in
            state.cursors += cursors
            state.commit = max(state.commit, commit)
            return state.cursors.count
        }
    }

    /// Up to a frame's worth of cursors, oldest first, with the commit to sync before they go.
    fileprivate func take() -> (cursors: [Int64], commit: UInt64)? {
        state.withLock { state in
            guard !state.cursors.isEmpty else { return nil }
            let cursors = Array(state.cursors.prefix(Self.frameLimit))
            state.cursors.removeFirst(cursors.count)
            return (cursors, state.commit)
        }
    }

    fileprivate func giveBack(_ cursors: [Int64], commit: UInt64) {
        state.withLock { state in
            state.cursors = cursors + state.cursors
            state.commit = max(state.commit, commit)
        }
    }

    fileprivate func attach(_ inbox: FrameInbox) {
        state.withLock { $0.inbox = inbox }
    }

    /// The connection ended: nobody acknowledges until the next one.
    fileprivate func detach(_ inbox: FrameInbox) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard state.inbox === inbox else { return [] }
            state.inbox = nil
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// An attempt to acknowledge ended, gone through or not.
    fileprivate func acknowledged() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Has the connection acknowledge what is held now; returns once it tried, or at once when
    /// nothing is held or nothing is connected.
    func acknowledgeNow() async {
        await withCheckedContinuation { continuation in
            let inbox = state.withLock { state -> FrameInbox? in
                guard !state.cursors.isEmpty, let inbox = state.inbox else { return nil }
                state.waiters.append(continuation)
                return inbox
            }
            guard let inbox else { return continuation.resume() }
            inbox.put(.acknowledge)
        }
    }
}

/// Frames received and not yet handled, taken all at once.
private final class FrameInbox: Sendable {
    enum Event: Sendable {
        case frame(Components.Schemas.StreamFrame)
        /// A binary receipt frame's receipts (§7.4).
        case receipts([Components.Schemas.MessageReceipt])
        /// Time to acknowledge what is held (`HeldAcknowledgements`).
        case acknowledge
        case closed
    }

    /// Yields when there is something to take; coalesces.
    let signals: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation
    private let events = Mutex<[Event]>([])

    init() {
        (signals, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    func put(_ event: Event) {
        events.withLock { $0.append(event) }
        signal.yield()
        if case .closed = event { signal.finish() }
    }

    func takeAll() -> [Event] {
        events.withLock { events in
            defer { events = [] }
            return events
        }
    }
}
