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
/// acknowledges what it stored, and after a drop reconnects with exponential back-off (with
/// jitter) and resumes after the stored cursor, so nothing is lost or delivered twice. While
/// connected, `sender` sends messages over the same socket.
struct MailboxStreamClient: Sendable {
    let serverURL: URL
    let token: String
    /// This device's key: the stream opens with a challenge it must sign.
    let identity: PrivateIdentity
    let address: DeviceAddress
    let sender: StreamSender
    var initialDelay: Duration = .milliseconds(250)
    var maximumDelay: Duration = .seconds(15)
    /// The most entries opened and stored in one transaction.
    static let batchLimit = 200

    /// Runs until the task is cancelled; throws only `sessionExpired` (after reporting `signedOut`).
    func run(
        cursor: @Sendable () async throws -> Int64,
        receive: @Sendable ([Components.Schemas.MailboxEntry]) async throws -> [Int64],
        state: @Sendable (ConnectionState) async -> Void
    ) async throws {
        var delay = initialDelay
        while !Task.isCancelled {
            await state(.connecting)
            let reason: String
            do {
                reason = try await session(
                    after: cursor(), receive: receive, connected: { delay = initialDelay }, state: state)
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
        receive: @Sendable ([Components.Schemas.MailboxEntry]) async throws -> [Int64],
        connected: () -> Void,
        state: @Sendable (ConnectionState) async -> Void
    ) async throws -> String {
        let inbox = FrameInbox()
        let socket = try await connect(after: cursor, inbox: inbox)
        connected()
        let encoder = StreamCoding.encoder()
        let reason = try await withTaskCancellationHandler {
            // Whatever arrived together is taken at once, so a burst is opened and stored in a
            // few transactions instead of one per message.
            for await _ in inbox.signals {
                var pending: [Components.Schemas.MailboxEntry] = []
                for event in inbox.takeAll() {
                    switch event {
                    case .closed:
                        try await flush(&pending, receive: receive, socket: socket, encoder: encoder)
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
                        }
                        for entry in (frame.entry.map { [$0] } ?? []) + (frame.entries ?? []) {
                            pending.append(entry)
                            if pending.count >= Self.batchLimit {
                                try await flush(&pending, receive: receive, socket: socket, encoder: encoder)
                            }
                        }
                        if let receipt = frame.receipt { await sender.resolve(receipt) }
                        if let refused = frame.refused { await sender.resolve(refused) }
                        if frame.caughtUp == true {
                            try await flush(&pending, receive: receive, socket: socket, encoder: encoder)
                            await state(.live)
                        }
                    }
                }
                try await flush(&pending, receive: receive, socket: socket, encoder: encoder)
            }
            return Self.closedReason
        } onCancel: {
            _ = socket.close()
        }
        try? await socket.close()
        return reason
    }

    private static let closedReason = "the server closed the connection"

    /// The relay's own reason for closing, if the close code is one of its codes.
    private static func relayCode(_ code: WebSocketErrorCode?) -> StreamCloseCode? {
        guard case .unknown(let raw)? = code else { return nil }
        return StreamCloseCode(rawValue: raw)
    }

    /// Stores what is pending and acknowledges it.
    private func flush(
        _ pending: inout [Components.Schemas.MailboxEntry],
        receive: @Sendable ([Components.Schemas.MailboxEntry]) async throws -> [Int64],
        socket: WebSocket, encoder: JSONEncoder
    ) async throws {
        guard !pending.isEmpty else { return }
        let stored = try await receive(pending)
        pending = []
        if !stored.isEmpty {
            let acknowledgement = try encoder.encode(Components.Schemas.StreamRequest(cursors: stored))
            try await socket.send(String(decoding: acknowledgement, as: UTF8.self))
        }
    }

    private func connect(after cursor: Int64, inbox: FrameInbox) async throws -> WebSocket {
        guard var components = URLComponents(url: serverURL, resolvingAgainstBaseURL: false) else {
            throw ConfidantKitError.invalidServerURL(serverURL.absoluteString)
        }
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        components.path = "/v1/stream"
        // Batched: a burst comes in a few frames instead of one per entry (docs/PROTOCOL.md §7);
        // binary: envelopes without base64 or JSON (§7.3). A relay from before binary deliveries
        // ignores the parameter and sends text, which is read as well.
        components.queryItems = [
            URLQueryItem(name: "after", value: String(cursor)), URLQueryItem(name: "batched", value: "true"),
            URLQueryItem(name: "deliveries", value: "binary"),
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

/// Frames received and not yet handled, taken all at once.
private final class FrameInbox: Sendable {
    enum Event: Sendable {
        case frame(Components.Schemas.StreamFrame)
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
