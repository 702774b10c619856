import ConfidantAPI
import ConfidantCrypto
import Fluent
import Foundation
import NIOCore
import NIOWebSocket
import Synchronization
import Vapor

/// `GET /v1/stream?after=CURSOR[&batched=true][&deliveries=binary][&receipts=binary]`: a WebSocket that replays the
/// device's unacknowledged entries after `after`, says `caughtUp`, then pushes new entries as they
/// are stored, one to a frame or, batched, several, as JSON text or binary (`StreamDeliveryForm`). The client
/// acknowledges with `StreamRequest` frames (`cursors`) and may send messages over the same
/// socket (`send`, or a binary `StreamSendFrame`; answered by `receipt`, or binary
/// `StreamReceiptFrame`s, or `refused`);
/// unacknowledged entries come again on the next connection. Each connection is a
/// `StreamSession`.
struct MailboxStream: Sendable {
    let mailbox: MailboxService
    let configuration: ServerConfiguration
    let outages: OutageLog
    /// The current identity of a device, to check its proof against.
    let identity: @Sendable (DeviceAddress) async throws -> PublicIdentity?
    /// Streams waiting for their proof, per client address.
    let unproven = UnprovenStreams()
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
            /// Whether the frames `name` chooses are to be binary (`json`, the default, or `binary`).
            func binary(_ name: String) throws -> Bool {
                switch request.query[String.self, at: name] {
                case nil, "json": false
                case "binary": true
                default: throw APIFailure.malformed("`\(name)` must be json or binary.")
                }
            }
            let binaryReceipts = try binary("receipts")
            let form = StreamDeliveryForm(batched: batched, binary: try binary("deliveries"))
            // The query is judged first, so that a bad value reads the same over plain HTTP.
            if let refusal = Self.refusedHandshake(request.headers) { return refusal }
            let address = request.clientAddress(trustedProxies: configuration.trustedProxies)
            try unproven.take(address)
            let unproven = unproven
            // Counted until the proof is decided (any way) or the upgrade never happens.
            let release = ReleaseOnce { unproven.give(address) }
            let response = Response(status: .switchingProtocols)
            let logger = request.logger
            response.upgrader = BoundedWebSocketUpgrader(
                maximumMessageBytes: Self.maximumFrameBytes(configuration),
                pingInterval: .seconds(Int64(configuration.streamPingSeconds))
            ) { [configuration, mailbox, outages, identity] socket in
                StreamSession(
                    socket: socket, caller: caller, after: after, form: form, binaryReceipts: binaryReceipts,
                    mailbox: mailbox,
                    configuration: configuration, outages: outages, identity: identity, logger: logger,
                    proofDecided: release.run
                ).start(proofWithin: .seconds(Int64(configuration.streamProofSeconds)))
            }
            request.eventLoop.scheduleTask(in: .seconds(Int64(configuration.streamProofSeconds) + 5)) {
                release.run()  // the upgrade failed, or the session never decided: counted no longer
            }
            return response
        }
    }

    /// RFC 6455 §4.2.1–4.2.2: a version the relay does not speak is answered 426 with the one it
    /// does (13); a `Sec-WebSocket-Key` that is not 16 bytes in base64 is a bad request.
    static func refusedHandshake(_ headers: HTTPHeaders) -> Response? {
        guard headers.first(name: "Sec-WebSocket-Version") == "13" else {
            return Response(status: .upgradeRequired, headers: ["Sec-WebSocket-Version": "13"])
        }
        guard let key = headers.first(name: "Sec-WebSocket-Key"), key.utf8.count == 24,
            Data(base64Encoded: key)?.count == 16
        else {
            return Response(status: .badRequest, headers: ["Sec-WebSocket-Version": "13"])
        }
        return nil
    }

    /// A send frame carries up to 256 base64 envelopes (4/3 of their size) plus JSON around them,
    /// bounded like the HTTP body of `POST /v1/messages`.
    static func maximumFrameBytes(_ configuration: ServerConfiguration) -> Int {
        max(1 << 16, configuration.maximumJSONBodyBytes)
    }

    /// Bytes of entries a caught-up stream may have sent without waiting (`liveSend`) and not yet
    /// written to its client; past them the stream's sending task sends, one batch written at a
    /// time.
    static let maximumLiveUnwrittenBytes = 1 << 20

    /// Sends entries from the thread that committed them, for a stream that is caught up and
    /// idle: one hand-over to the socket's event loop instead of a task started and then a
    /// hand-over to the event loop. Refuses (false) what would put more than
    /// `maximumLiveUnwrittenBytes` unwritten, so that a client that does not read meets the
    /// sending task's back-pressure instead of a growing buffer.
    static func liveSend(to socket: StreamSocket, form: StreamDeliveryForm, logger: Logger) -> MailboxInbox.LiveSend {
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
                    write(try form.frames(entries), to: socket, written: written)
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

    /// Sends `frames` in order without waiting; `written` completes once the last is written (at
    /// once when there are none).
    static func write(
        _ frames: [StreamDeliveryForm.Frame], to socket: StreamSocket, written: EventLoopPromise<Void>
    ) {
        guard !frames.isEmpty else { return written.succeed() }
        for (index, frame) in frames.enumerated() {
            let promise = index == frames.count - 1 ? written : nil
            switch frame {
            case .text(let text): socket.send(text, promise: promise)
            case .binary(let bytes): socket.send(binary: bytes, promise: promise)
            }
        }
    }
}
