import ConfidantAPI
import ConfidantCrypto
import Fluent
import Foundation
import NIOCore
import NIOWebSocket
import Synchronization
import Vapor

/// `GET /v1/stream?after=CURSOR[&batched=true]`: a WebSocket that replays the device's
/// unacknowledged entries after `after`, says `caughtUp`, then pushes new entries as they are
/// stored, one to a frame or, batched, several (`StreamFrameText.frames`). The client
/// acknowledges with `StreamRequest` frames (`cursors`) and may send messages over the same
/// socket (`send`, or a binary `StreamSendFrame`; answered by `receipt` or `refused`);
/// unacknowledged entries come again on the next connection.
struct MailboxStream: Sendable {
    let mailbox: MailboxService
    let configuration: ServerConfiguration
    let outages: OutageLog
    /// The current identity of a device, to check its proof against.
    let identity: @Sendable (DeviceAddress) async throws -> PublicIdentity?
    static let pageSize = 200
    /// Sends a connection may have waiting for their group commit; more are refused
    /// (`too_many_in_flight`), so that one client cannot queue without bound.
    static let maximumInFlight = 512
    /// Frames a connection may have waiting to be read; a client that outruns that is closed.
    static let maximumQueuedFrames = 4096
    /// Bytes of frames a connection may have waiting to be read (1008 past it).
    static let maximumQueuedBytes = 16 << 20
    /// Bytes of answers (receipts, refusals, problems) a connection may have waiting to be
    /// written to a client that does not read them (1008 past it).
    static let maximumUnwrittenAnswerBytes = 1 << 20

    func register(on app: Application) {
        app.get("v1", "stream") { request async throws -> Response in
            guard let caller = request.storage[CallerKey.self] else { throw APIFailure.unauthenticated }
            let text = request.query[String.self, at: "after"] ?? "0"
            guard let after = Int64(text), after >= 0 else {
                throw APIFailure.malformed("`after` must be a cursor (an integer ≥ 0).")
            }
            let batched: Bool
            switch request.query[String.self, at: "batched"] {
            case nil, "false": batched = false
            case "true": batched = true
            default: throw APIFailure.malformed("`batched` must be true or false.")
            }
            let response = Response(status: .switchingProtocols)
            let logger = request.logger
            response.upgrader = BoundedWebSocketUpgrader(
                maximumMessageBytes: Self.maximumFrameBytes(configuration),
                pingInterval: .seconds(Int64(configuration.streamPingSeconds))
            ) { socket in
                Task { await run(socket, caller: caller, after: after, batched: batched, logger: logger) }
            }
            return response
        }
    }

    /// A send frame carries up to 256 base64 envelopes (4/3 of their size) plus JSON around them,
    /// bounded like the HTTP body of `POST /v1/messages`.
    static func maximumFrameBytes(_ configuration: ServerConfiguration) -> Int {
        max(1 << 16, configuration.maximumJSONBodyBytes)
    }

    private func run(_ socket: StreamSocket, caller: Caller, after: Int64, batched: Bool, logger: Logger) async {
        let hub = mailbox.hub
        let inbox = hub.subscribe(caller, after: after)
        // Frames are handled one at a time in the order they arrive (a task per frame would take
        // them in no order), so consecutive sends keep theirs.
        let (frames, frameInput) = AsyncStream<IncomingFrame>.makeStream(
            bufferingPolicy: .bufferingOldest(Self.maximumQueuedFrames))
        let unread = ByteBudget(limit: Self.maximumQueuedBytes)
        let order = StreamFrameOrder()
        let proof = StreamProof()
        let requests = StreamRequests(
            caller: caller, mailbox: mailbox, socket: socket, proof: proof, outages: outages,
            maximumEnvelopeBytes: configuration.maximumEnvelopeBytes, identity: identity, logger: logger)
        socket.eventLoop.execute {  // the callbacks may only be set on the socket's event loop
            socket.onText { socket, text in
                // As for binary sends below: taken at once when nothing waits before it.
                if order.mayTakeAtOnce, !inbox.isRevoked {
                    requests.takeRequest(text)
                    return
                }
                order.enqueue()
                guard unread.take(text.utf8.count), case .enqueued = frameInput.yield(.text(text)) else {
                    _ = socket.close(code: .policyViolation)
                    return
                }
            }
            socket.onBinary { socket, buffer in
                // Nothing more is taken from a session that ended, not even what it sent just before.
                if order.mayTakeAtOnce, !inbox.isRevoked {
                    requests.takeSend(buffer)
                    return
                }
                order.enqueue()
                guard unread.take(buffer.readableBytes), case .enqueued = frameInput.yield(.binary(buffer)) else {
                    _ = socket.close(code: .policyViolation)
                    return
                }
            }
            // Registered after the callbacks, on the same loop: if the socket closed already, this
            // runs at once and still finds them to clear.
            socket.onClose.whenComplete { _ in
                frameInput.finish()
                hub.unsubscribe(inbox)
                // The binary callback holds `requests`, which holds the socket, which holds its
                // callbacks: the cycle is broken here (and by the socket itself once it closes).
                socket.onText { _, _ in }
                socket.onBinary { _, _ in }
            }
        }
        let handling = Task {
            await handle(frames, with: requests, unread: unread, order: order, inbox: inbox)
        }
        let encoder = StreamCoding.encoder()
        // Nothing is delivered or taken before the client proves it holds its device's key.
        if let challenge = try? encoder.encode(
            Components.Schemas.StreamFrame(
                challenge: .init(proof.challenge),
                binarySendVersions: [Int(StreamSendFrame.version), Int(StreamSendFrame.orderedVersion)]))
        {
            socket.send(String(decoding: challenge, as: UTF8.self), promise: nil)
        }
        let outcome = await proof.outcome(within: .seconds(configuration.streamProofSeconds))
        guard outcome == .proven else {
            hub.unsubscribe(inbox)
            let code: WebSocketErrorCode =
                switch outcome {
                case .late: .unknown(StreamCloseCode.proofLate.rawValue)
                case .refused: .unknown(StreamCloseCode.proofRefused.rawValue)
                // Not the client's doing (`.proven` does not get here): an ordinary server error,
                // after which the client connects again.
                case .unavailable, .proven: .unexpectedServerError
                }
            try? await socket.close(code: code)
            frameInput.finish()
            await handling.value
            return
        }
        var caughtUp = false
        let live = Self.liveSend(to: socket, batched: batched, logger: logger)
        do {
            for await _ in inbox.signals {
                switch inbox.next() {
                case .entries(let entries):
                    let sentThrough = inbox.sentThrough
                    let fresh = entries.filter { $0.cursor > sentThrough }
                    try await send(fresh, to: socket, batched: batched)
                    if let last = fresh.last { inbox.sent(through: last.cursor) }
                case .read:
                    while !socket.isClosed {
                        let page = try await Self.briefly { [mailbox, after = inbox.sentThrough] in
                            try await mailbox.page(of: caller.address, after: after, limit: Self.pageSize)
                        }
                        try await send(page.entries, to: socket, batched: batched)
                        if let last = page.entries.last { inbox.sent(through: last.cursor) }
                        if !page.hasMore { break }
                    }
                }
                if !caughtUp {
                    caughtUp = true
                    try await socket.send(
                        String(
                            decoding: try encoder.encode(Components.Schemas.StreamFrame(caughtUp: true)), as: UTF8.self)
                    )
                }
                if socket.isClosed { break }
                // Caught up, and all it took is written: rows now go out from the thread that
                // committed them until this loop has work again (`MailboxInbox.goLive`).
                _ = inbox.goLive(live)
            }
        } catch {
            logger.debug("stream ended", metadata: ["error": "\(String(reflecting: type(of: error)))"])
        }
        hub.unsubscribe(inbox)
        // A revoked session's stream closes with 4401, so that its client stops reconnecting with it.
        try? await socket.close(code: inbox.isRevoked ? .unknown(StreamCloseCode.revoked.rawValue) : .normalClosure)
        frameInput.finish()
        await handling.value
    }

    /// Bytes of entries a caught-up stream may have sent without waiting (`liveSend`) and not yet
    /// written to its client; past them the stream's task sends, one batch written at a time.
    static let maximumLiveUnwrittenBytes = 1 << 20

    /// Sends entries from the thread that committed them, for a stream that is caught up and
    /// idle: one hand-over to the socket's event loop instead of a wake-up of the stream's task
    /// and then one to the event loop. Refuses (false) what would put more than
    /// `maximumLiveUnwrittenBytes` unwritten, so that a client that does not read meets the
    /// task's back-pressure instead of a growing buffer.
    static func liveSend(to socket: StreamSocket, batched: Bool, logger: Logger) -> MailboxInbox.LiveSend {
        let unwritten = ByteBudget(limit: maximumLiveUnwrittenBytes)
        return { entries in
            guard !entries.isEmpty else { return true }
            // Base64 is 4/3 of the envelope; the rest of a frame is well under 400 bytes.
            let bytes = entries.reduce(0) { $0 + $1.payload.count / 3 * 4 + 400 }
            guard unwritten.take(bytes) else { return false }
            socket.eventLoop.execute {
                let written = socket.eventLoop.makePromise(of: Void.self)
                written.futureResult.whenComplete { _ in unwritten.give(bytes) }
                do {
                    write(try StreamFrameText.frames(entries, batched: batched), to: socket, written: written)
                } catch {
                    // The entries stay stored: the client gets them again when it reconnects.
                    logger.warning(
                        "stream closed: an entry could not be encoded",
                        metadata: ["error": "\(String(reflecting: type(of: error)))"])
                    written.succeed()
                    _ = socket.close(code: .unexpectedServerError)
                }
            }
            return true
        }
    }

    /// The entries' frames (`StreamFrameText.frames`); waits only for the last one to be written,
    /// so that a slow reader holds up its own stream and nothing else.
    private func send(_ entries: [MailboxEntry], to socket: StreamSocket, batched: Bool) async throws {
        let written = socket.eventLoop.makePromise(of: Void.self)
        Self.write(try StreamFrameText.frames(entries, batched: batched), to: socket, written: written)
        try await written.futureResult.get()
    }

    /// Sends `frames` in order without waiting; `written` completes once the last is written (at
    /// once when there are none).
    private static func write(_ frames: [String], to socket: StreamSocket, written: EventLoopPromise<Void>) {
        guard let last = frames.last else { return written.succeed() }
        for frame in frames.dropLast() { socket.send(frame, promise: nil) }
        socket.send(last, promise: written)
    }

    /// Acknowledgements and sends from the client, in order. Each goes to the writer without
    /// waiting for the previous one to commit; its answer is sent when its group has. The loop
    /// that waits here for as long as the connection lives keeps a small frame: the work for each
    /// frame happens in `StreamRequests.take`, whose memory is given back when it returns. Frames
    /// that find nothing queued here once the proof is accepted skip this loop (`StreamFrameOrder`).
    private func handle(
        _ frames: AsyncStream<IncomingFrame>, with requests: StreamRequests, unread: ByteBudget,
        order: StreamFrameOrder, inbox: MailboxInbox
    ) async {
        var proven = false
        for await frame in frames {
            unread.give(frame.count)
            // Nothing more is taken from a session that ended, not even what it sent just before.
            if inbox.isRevoked { break }
            guard await requests.take(frame, proven: &proven) else { break }
            if proven { order.prove() }
            order.finished()
        }
    }
}
