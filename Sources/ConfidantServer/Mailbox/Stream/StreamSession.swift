import ConfidantAPI
import ConfidantCrypto
import Foundation
import Logging
import NIOCore
import NIOWebSocket
import Synchronization

/// One `/v1/stream` connection from its challenge to its close, driven by what happens to it
/// rather than by tasks that wait: the frames its connection cannot take at once (`StreamFrameOrder`)
/// are taken by a task that runs only while there are some, and the inbox's news starts a task
/// that sends what is new and ends once the stream is caught up, after which new rows go out from
/// the thread that committed them (`MailboxInbox.goLive`).
///
/// Why: a task keeps the memory its deepest call needed until it ends, so an idle stream holds
/// no task (`MailboxHub.streamTasks`).
final class StreamSession: Sendable {
    private let socket: StreamSocket
    private let caller: Caller
    private let mailbox: MailboxService
    private let hub: MailboxHub
    private let inbox: MailboxInbox
    private let requests: StreamRequests
    private let proof = StreamProof()
    private let order = StreamFrameOrder()
    private let unread = ByteBudget(limit: MailboxStream.maximumQueuedBytes)
    private let form: StreamDeliveryForm
    private let logger: Logger
    private let live: MailboxInbox.LiveSend
    private let state = Mutex(State())
    /// Told once the proof is decided, however (`UnprovenStreams`).
    private let proofDecidedHook: @Sendable () -> Void

    private struct State {
        /// Frames waiting for the frame task, in the order they arrived.
        var frames = CircularBuffer<IncomingFrame>()
        var takingFrames = false
        /// False once a frame ended the stream (a refused proof): later frames are dropped.
        var acceptingFrames = true
        var proven = false
        var proofHandled = false
        var sending = false
        /// News came while the sending task ran: it goes round once more before it ends.
        var sendAgain = false
        var caughtUp = false
        var ended = false
    }

    init(
        socket: StreamSocket, caller: Caller, after: Int64, form: StreamDeliveryForm, binaryReceipts: Bool,
        mailbox: MailboxService, configuration: ServerConfiguration, outages: OutageLog,
        identity: @escaping @Sendable (DeviceAddress) async throws -> PublicIdentity?, logger: Logger,
        proofDecided: @escaping @Sendable () -> Void = {}
    ) {
        self.proofDecidedHook = proofDecided
        self.socket = socket
        self.caller = caller
        self.mailbox = mailbox
        self.form = form
        self.logger = logger
        hub = mailbox.hub
        inbox = hub.subscribe(caller, after: after)
        requests = StreamRequests(
            caller: caller, mailbox: mailbox, socket: socket, proof: proof, outages: outages,
            maximumEnvelopeBytes: configuration.maximumEnvelopeBytes, binaryReceipts: binaryReceipts,
            identity: identity, logger: logger)
        live = MailboxStream.liveSend(to: socket, form: form, logger: logger)
    }

    /// Sets the connection's handlers, sends the challenge and gives the client `proofWithin` to
    /// answer it. On the socket's event loop.
    func start(proofWithin limit: TimeAmount) {
        socket.onText { [self] _, text in arrived(.text(text)) }
        socket.onBinary { [self] _, buffer in arrived(.binary(buffer)) }
        // Registered after the handlers, on the same loop: if the socket closed already, this runs
        // at once. The handlers hold this session, which holds the socket: the socket drops them
        // when it closes.
        socket.onClose.whenComplete { [self] _ in end() }
        inbox.notify { [self] notice in
            switch notice {
            case .ready: send()
            case .finished: end()
            }
        }
        // Nothing is delivered or taken before the client proves it holds its device's key.
        if let challenge = try? StreamCoding.encoder().encode(
            Components.Schemas.StreamFrame(
                challenge: .init(proof.challenge),
                binarySendVersions: [
                    Int(StreamSendFrame.version), Int(StreamSendFrame.orderedVersion), Int(SharedSendFrame.version),
                ]))
        {
            socket.send(String(decoding: challenge, as: UTF8.self), promise: nil)
        }
        socket.eventLoop.scheduleTask(in: limit) { [self] in
            if proof.decide(.late) { proofDecided(.late) }
        }
    }

    // MARK: Frames from the client

    /// A frame, on the event loop: taken at once when nothing waits before it (after the proof),
    /// queued for the frame task otherwise.
    private func arrived(_ frame: IncomingFrame) {
        // Nothing more is taken from a session that ended, not even what it sent just before.
        if order.mayTakeAtOnce, !inbox.isRevoked {
            switch frame {
            case .text(let text): requests.takeRequest(text)
            case .binary(let buffer): requests.takeSend(buffer)
            }
            return
        }
        order.enqueue()
        guard unread.take(frame.count) else {
            socket.close(code: .policyViolation)
            return
        }
        enum Queued {
            case drop, overflow
            case queued(startTask: Bool)
        }
        let queued = state.withLock { state -> Queued in
            guard state.acceptingFrames, !state.ended else { return .drop }
            guard state.frames.count < MailboxStream.maximumQueuedFrames else { return .overflow }
            state.frames.append(frame)
            defer { state.takingFrames = true }
            return .queued(startTask: !state.takingFrames)
        }
        switch queued {
        case .drop: return
        case .overflow: socket.close(code: .policyViolation)
        case .queued(let startTask): if startTask { runTask { await self.takeFrames() } }
        }
    }

    /// The frame task: takes the queued frames in order, then ends.
    private func takeFrames() async {
        while let frame = nextFrame() {
            unread.give(frame.count)
            guard !inbox.isRevoked else {
                stopTakingFrames()
                return
            }
            var proven = state.withLock { $0.proven }
            let keep = await requests.take(frame, proven: &proven)
            if proven {
                state.withLock { $0.proven = true }
                order.prove()
            }
            order.finished()
            if let outcome = proof.decided { proofDecided(outcome) }
            guard keep else {
                stopTakingFrames()
                return
            }
        }
    }

    private func nextFrame() -> IncomingFrame? {
        state.withLock { state in
            guard state.acceptingFrames, let frame = state.frames.popFirst() else {
                state.takingFrames = false
                return nil
            }
            return frame
        }
    }

    private func stopTakingFrames() {
        state.withLock { state in
            state.acceptingFrames = false
            state.frames.removeAll()
            state.takingFrames = false
        }
    }

    /// The proof was decided (by the first frame or the time limit); the first call acts.
    private func proofDecided(_ outcome: StreamProof.Outcome) {
        let first = state.withLock { state in
            defer { state.proofHandled = true }
            return !state.proofHandled
        }
        guard first else { return }
        proofDecidedHook()
        switch outcome {
        case .proven:
            hub.proven(inbox)
            send()
        case .late: end(closingWith: .unknown(StreamCloseCode.proofLate.rawValue))
        case .refused: end(closingWith: .unknown(StreamCloseCode.proofRefused.rawValue))
        // Not the client's doing: an ordinary server error, after which the client connects again.
        case .unavailable: end(closingWith: .unexpectedServerError)
        }
    }

    // MARK: Entries to the client

    /// Starts the sending task, or has the running one go round once more. Nothing is sent before
    /// the proof.
    private func send() {
        let start = state.withLock { state -> Bool in
            guard state.proofHandled, state.proven, !state.ended else { return false }
            if state.sending {
                state.sendAgain = true
                return false
            }
            state.sending = true
            return true
        }
        if start { runTask { await self.sendAll() } }
    }

    /// The sending task: sends what the inbox has (the first time everything stored after the
    /// client's cursor, then `caughtUp`), until nothing new came meanwhile; then the stream goes
    /// live and the task ends.
    private func sendAll() async {
        do {
            while true {
                try await sendWhatIsNew()
                if socket.isClosed { return end() }
                // Caught up, and all it took is written: rows now go out from the thread that
                // committed them until the inbox has news again.
                _ = inbox.goLive(live)
                let done = state.withLock { state -> Bool in
                    guard !state.sendAgain, !state.ended else {
                        state.sendAgain = false
                        return state.ended
                    }
                    state.sending = false
                    return true
                }
                if done { return }
            }
        } catch {
            logger.debug("stream ended", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            end()
        }
    }

    private func sendWhatIsNew() async throws {
        switch inbox.next() {
        case .entries(let entries):
            let sentThrough = inbox.sentThrough
            let fresh = entries.filter { $0.cursor > sentThrough }
            try await write(fresh)
            if let last = fresh.last { inbox.sent(through: last.cursor) }
        case .read:
            while !socket.isClosed {
                let page = try await mailbox.page(
                    of: caller.address, after: inbox.sentThrough, limit: MailboxStream.pageSize)
                try await write(page.entries)
                if let last = page.entries.last { inbox.sent(through: last.cursor) }
                if !page.hasMore { break }
            }
        }
        let first = state.withLock { state in
            defer { state.caughtUp = true }
            return !state.caughtUp
        }
        if first {
            try await socket.send(
                String(
                    decoding: try StreamCoding.encoder().encode(Components.Schemas.StreamFrame(caughtUp: true)),
                    as: UTF8.self))
        }
    }

    /// The entries' frames (`StreamDeliveryForm.frames`); waits only for the last one to be written,
    /// so that a slow reader holds up its own stream and nothing else.
    private func write(_ entries: [MailboxEntry]) async throws {
        let written = socket.eventLoop.makePromise(of: Void.self)
        MailboxStream.write(try form.frames(entries), to: socket, written: written)
        try await written.futureResult.get()
    }

    // MARK: The end

    /// Ends the stream, once: no more frames are taken or entries sent, the inbox goes, and the
    /// connection closes with `code` — by default 4401 for a revoked session (so that its client
    /// stops reconnecting with it), else a normal closure.
    private func end(closingWith code: WebSocketErrorCode? = nil) {
        let first = state.withLock { state in
            defer {
                state.ended = true
                state.acceptingFrames = false
                state.frames.removeAll()
            }
            return !state.ended
        }
        guard first else { return }
        proofDecidedHook()
        hub.unsubscribe(inbox)
        let ended: WebSocketErrorCode =
            if inbox.isRevoked {
                .unknown(StreamCloseCode.revoked.rawValue)
            } else if inbox.isSuperseded {
                .unknown(StreamCloseCode.superseded.rawValue)
            } else {
                .normalClosure
            }
        socket.close(code: code ?? ended)
    }

    /// Runs `work` in a task counted in `MailboxHub.streamTasks`.
    private func runTask(_ work: @escaping @Sendable () async -> Void) {
        hub.streamTasks.add(1, ordering: .relaxed)
        Task { [hub] in
            await work()
            hub.streamTasks.subtract(1, ordering: .relaxed)
        }
    }
}
