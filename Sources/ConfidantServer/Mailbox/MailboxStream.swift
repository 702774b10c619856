import ConfidantAPI
import ConfidantCrypto
import Fluent
import Foundation
import NIOCore
import NIOWebSocket
import Synchronization
import Vapor

/// `GET /v1/stream?after=CURSOR`: a WebSocket that replays the device's unacknowledged entries
/// after `after`, says `caughtUp`, then pushes new entries as they are stored. The client
/// acknowledges with `StreamRequest` frames (`cursors`) and may send messages over the same
/// socket (`send`, answered by `receipt` or `refused`); unacknowledged entries come again on the
/// next connection.
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
            let response = Response(status: .switchingProtocols)
            let logger = request.logger
            response.upgrader = BoundedWebSocketUpgrader(
                maximumMessageBytes: Self.maximumFrameBytes(configuration),
                pingInterval: .seconds(Int64(configuration.streamPingSeconds))
            ) { socket in
                Task { await run(socket, caller: caller, after: after, logger: logger) }
            }
            return response
        }
    }

    /// A send frame carries up to 256 base64 envelopes (4/3 of their size) plus JSON around them,
    /// bounded like the HTTP body of `POST /v1/messages`.
    static func maximumFrameBytes(_ configuration: ServerConfiguration) -> Int {
        max(1 << 16, configuration.maximumJSONBodyBytes)
    }

    private func run(_ socket: WebSocket, caller: Caller, after: Int64, logger: Logger) async {
        let hub = mailbox.hub
        let inbox = hub.subscribe(caller)
        // Frames are handled one at a time in the order they arrive (WebSocketKit's async
        // `onText` would start one task per frame, in no order), so consecutive sends keep theirs.
        let (frames, frameInput) = AsyncStream<IncomingFrame>.makeStream(
            bufferingPolicy: .bufferingOldest(Self.maximumQueuedFrames))
        let unread = ByteBudget(limit: Self.maximumQueuedBytes)
        socket.onClose.whenComplete { _ in
            frameInput.finish()
            hub.unsubscribe(inbox)
        }
        socket.eventLoop.execute {  // the callback may only be set on the socket's event loop
            socket.onText { socket, text in
                guard unread.take(text.utf8.count), case .enqueued = frameInput.yield(.text(text)) else {
                    _ = socket.close(code: .policyViolation)
                    return
                }
            }
            socket.onBinary { socket, buffer in
                guard unread.take(buffer.readableBytes), case .enqueued = frameInput.yield(.binary(buffer)) else {
                    _ = socket.close(code: .policyViolation)
                    return
                }
            }
        }
        let proof = StreamProof()
        let requests = Task {
            await handle(frames, unread: unread, from: socket, inbox: inbox, proof: proof, logger: logger)
        }
        let encoder = StreamCoding.encoder()
        // Nothing is delivered or taken before the client proves it holds its device's key.
        if let challenge = try? encoder.encode(
            Components.Schemas.StreamFrame(
                challenge: .init(proof.challenge), binarySendVersions: [Int(StreamSendFrame.version)]))
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
            await requests.value
            return
        }
        var lastSent = after
        var caughtUp = false
        do {
            for await _ in inbox.signals {
                switch inbox.next() {
                case .entries(let entries):
                    try await send(entries.filter { $0.cursor > lastSent }, to: socket, encoder: encoder)
                    lastSent = max(lastSent, entries.last?.cursor ?? lastSent)
                case .read:
                    while !socket.isClosed {
                        let page = try await mailbox.page(of: caller.address, after: lastSent, limit: Self.pageSize)
                        try await send(page.entries, to: socket, encoder: encoder)
                        lastSent = page.entries.last?.cursor ?? lastSent
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
            }
        } catch {
            logger.debug("stream ended", metadata: ["error": "\(String(reflecting: type(of: error)))"])
        }
        hub.unsubscribe(inbox)
        // A revoked session's stream closes with 4401, so that its client stops reconnecting with it.
        try? await socket.close(code: inbox.isRevoked ? .unknown(StreamCloseCode.revoked.rawValue) : .normalClosure)
        frameInput.finish()
        await requests.value
    }

    /// One frame per entry; waits only for the last one to be written, so that a slow reader
    /// holds up its own stream and nothing else.
    private func send(_ entries: [MailboxEntry], to socket: WebSocket, encoder: JSONEncoder) async throws {
        for (index, entry) in entries.enumerated() {
            let frame =
                try StreamFrameText.entry(entry)
                ?? String(
                    decoding: try encoder.encode(Components.Schemas.StreamFrame(entry: try entry.wire)), as: UTF8.self)
            if index == entries.count - 1 {
                try await socket.send(frame)
            } else {
                socket.send(frame, promise: nil)
            }
        }
    }

    /// Acknowledgements and sends from the client, in order. Each goes to the writer without
    /// waiting for the previous one to commit; its answer is sent when its group has.
    private func handle(
        _ frames: AsyncStream<IncomingFrame>, unread: ByteBudget, from socket: WebSocket, inbox: MailboxInbox,
        proof: StreamProof, logger: Logger
    ) async {
        let caller = inbox.caller
        let decoder = StreamCoding.decoder()
        let encoder = StreamCoding.encoder()
        let mailbox = mailbox
        let maximumEnvelopeBytes = configuration.maximumEnvelopeBytes
        let inFlight = InFlightCount()
        let unwritten = ByteBudget(limit: Self.maximumUnwrittenAnswerBytes)
        /// Sends an answer without waiting for it to be written; a client that leaves more than
        /// the budget unread is closed instead of queued for.
        @Sendable func reply(_ text: String) {
            let bytes = text.utf8.count
            guard unwritten.take(bytes) else {
                _ = socket.close(code: .policyViolation)
                return
            }
            let written = socket.eventLoop.makePromise(of: Void.self)
            written.futureResult.whenComplete { _ in unwritten.give(bytes) }
            socket.send(text, promise: written)
        }
        @Sendable func answer(_ frame: Components.Schemas.StreamFrame) {
            if let receipt = frame.receipt, let text = try? StreamFrameText.receipt(receipt) {
                reply(text)
            } else if let data = try? encoder.encode(frame) {
                reply(String(decoding: data, as: UTF8.self))
            }
        }
        @Sendable func refuse(_ messageID: String, _ failure: APIFailure) {
            answer(.init(refused: .init(messageId: messageID, error: failure.code.rawValue, message: failure.message)))
        }
        /// Admits a send and hands it to the writer; its answer names `messageID` as the client wrote it.
        @Sendable func send(_ submission: MailboxSubmission, messageID: String) async {
            do {
                try mailbox.admit(submission)
            } catch {
                refuse(messageID, error)
                return
            }
            guard inFlight.begin(limit: Self.maximumInFlight) else {
                refuse(
                    messageID,
                    APIFailure(
                        .tooManyInFlight,
                        "More than \(Self.maximumInFlight) sends wait for their receipt; wait for some before sending more."
                    ))
                return
            }
            await mailbox.enqueueSend(submission) { result in
                inFlight.end()
                switch result {
                case .success(let receipt): answer(.init(receipt: receipt.wire(messageID: messageID)))
                case .failure(let error):
                    refuse(messageID, APIFailure.reported(error, outages: outages, logger: logger))
                }
            }
        }
        var proven = false
        for await frame in frames {
            unread.give(frame.count)
            // Nothing more is taken from a session that ended, not even what it sent just before.
            if inbox.isRevoked { break }
            let request: Components.Schemas.StreamRequest?
            var sendFrame: Result<StreamSendFrame, StreamSendFrameError>?
            switch frame {
            case .text(let text):
                request = try? decoder.decode(Components.Schemas.StreamRequest.self, from: Data(text.utf8))
            case .binary(let buffer):
                request = nil
                sendFrame = Result { () throws(StreamSendFrameError) in
                    try StreamSendFrame(serialized: Data(buffer.readableBytesView))
                }
            }
            if !proven {
                // The first frame must be the proof; anything else ends the stream.
                guard let signature = request?.proof else {
                    proof.decide(.refused)
                    break
                }
                let identity: PublicIdentity?
                do {
                    identity = try await self.identity(caller.address)
                } catch {
                    // A busy or failing database says nothing about the device's key: refusing
                    // (4403) would sign the device out for good.
                    logger.warning(
                        "stream proof not checked: the device's key could not be read",
                        metadata: ["error": "\(String(reflecting: type(of: error)))"])
                    proof.decide(.unavailable)
                    break
                }
                guard let identity, proof.verifies(signature.data, by: identity, of: caller.address) else {
                    proof.decide(.refused)
                    break
                }
                proven = true
                proof.decide(.proven)
                continue
            }
            if let sendFrame {
                switch sendFrame {
                case .success(let sendFrame):
                    do {
                        let submission = try MailboxSubmission(
                            sendFrame, from: caller.address, maximumEnvelopeBytes: maximumEnvelopeBytes)
                        await send(submission, messageID: submission.messageID.canonicalString)
                    } catch {
                        // The message id is the first envelope's, if its header can be read.
                        let messageID = sendFrame.envelopes.first.flatMap { try? WireEnvelope(serialized: $0) }?
                            .messageID.canonicalString
                        if let messageID {
                            refuse(messageID, error)
                        } else {
                            reply(Self.problem(error.code, error.message))
                        }
                    }
                case .failure(let error):
                    reply(Self.problem(.malformedRequest, error.description))
                }
                continue
            }
            guard let request else {
                reply(
                    Self.problem(
                        .malformedRequest,
                        "Send {\"cursors\": [..]} to acknowledge or {\"send\": {..}} (a MessageBatch) to send."))
                continue
            }
            if let cursors = request.cursors {
                do {
                    try await mailbox.enqueueAcknowledgement(cursors, for: caller.address) { error in
                        let failure = APIFailure.reported(error, outages: outages, logger: logger)
                        reply(Self.problem(failure.code, failure.message))
                    }
                } catch {
                    reply(Self.problem(error.code, error.message))
                }
            }
            if let batch = request.send {
                do {
                    await send(
                        try MailboxSubmission(batch, from: caller.address, maximumEnvelopeBytes: maximumEnvelopeBytes),
                        messageID: batch.messageId)
                } catch {
                    refuse(batch.messageId, error)
                }
            }
        }
    }

    private static func problem(_ code: APIErrorCode, _ message: String) -> String {
        let body = ["error": code.rawValue, "message": message]
        return (try? JSONEncoder().encode(body)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

/// A frame from the client: a `StreamRequest` in JSON, or a binary send frame.
private enum IncomingFrame: Sendable {
    case text(String)
    case binary(ByteBuffer)

    /// Its size, as counted against the connection's budget of unread bytes.
    var count: Int {
        switch self {
        case .text(let text): text.utf8.count
        case .binary(let buffer): buffer.readableBytes
        }
    }
}

/// Sends of one connection waiting for their receipt.
private final class InFlightCount: Sendable {
    private let count = Mutex(0)

    func begin(limit: Int) -> Bool {
        count.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func end() { count.withLock { $0 -= 1 } }
}
