import ConfidantAPI
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import WebSocketKit

/// Where the realtime connection stands, for a status line.
public enum ConnectionState: Sendable, Equatable {
    case connecting
    /// Connected and caught up with everything stored on the server.
    case live
    /// Disconnected; the next attempt is after this delay.
    case waiting(retryIn: Duration, reason: String)
    case stopped
}

/// Keeps `/v1/stream` open: hands each entry to `receive`, acknowledges what it stored, and after
/// a drop reconnects with exponential back-off (with jitter) and resumes after the stored cursor,
/// so nothing is lost or delivered twice.
struct MailboxStreamClient: Sendable {
    let serverURL: URL
    let token: String
    var initialDelay: Duration = .milliseconds(250)
    var maximumDelay: Duration = .seconds(15)
    var logger = Logger(label: "confidant.stream")

    private enum Event: Sendable {
        case frame(Components.Schemas.StreamFrame)
        case closed
    }

    /// Runs until the task is cancelled; throws only `sessionExpired`.
    func run(cursor: @Sendable () async throws -> Int64,
             receive: @Sendable ([Components.Schemas.MailboxEntry]) async throws -> [Int64],
             state: @Sendable (ConnectionState) async -> Void) async throws {
        var delay = initialDelay
        while !Task.isCancelled {
            await state(.connecting)
            let reason: String
            do {
                try await session(after: cursor(), receive: receive, connected: { delay = initialDelay }, state: state)
                reason = "the server closed the connection"
            } catch ConfidantKitError.sessionExpired {
                await state(.stopped)
                throw ConfidantKitError.sessionExpired
            } catch {
                reason = RelayClient.describe(error)
            }
            if Task.isCancelled { break }
            let jittered = delay * Double.random(in: 0.8...1.2)
            await state(.waiting(retryIn: jittered, reason: reason))
            try? await Task.sleep(for: jittered)
            delay = min(delay * 2, maximumDelay)
        }
        await state(.stopped)
    }

    private func session(after cursor: Int64,
                         receive: @Sendable ([Components.Schemas.MailboxEntry]) async throws -> [Int64],
                         connected: () -> Void,
                         state: @Sendable (ConnectionState) async -> Void) async throws {
        let (events, continuation) = AsyncStream<Event>.makeStream()
        let socket = try await connect(after: cursor, continuation: continuation)
        connected()
        let encoder = StreamCoding.encoder()
        try await withTaskCancellationHandler {
            for await event in events {
                switch event {
                case .closed:
                    return
                case .frame(let frame):
                    if frame.caughtUp == true { await state(.live) }
                    guard let entry = frame.entry else { continue }
                    let stored = try await receive([entry])
                    if !stored.isEmpty {
                        let acknowledgement = try encoder.encode(Components.Schemas.StreamAcknowledgement(cursors: stored))
                        try await socket.send(String(decoding: acknowledgement, as: UTF8.self))
                    }
                }
            }
        } onCancel: {
            _ = socket.close()
        }
        try? await socket.close()
    }

    private func connect(after cursor: Int64, continuation: AsyncStream<Event>.Continuation) async throws -> WebSocket {
        guard var components = URLComponents(url: serverURL, resolvingAgainstBaseURL: false) else {
            throw ConfidantKitError.invalidServerURL(serverURL.absoluteString)
        }
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        components.path = "/v1/stream"
        components.queryItems = [URLQueryItem(name: "after", value: String(cursor))]
        guard let url = components.string else { throw ConfidantKitError.invalidServerURL(serverURL.absoluteString) }
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: "Bearer \(token)")
        let group = MultiThreadedEventLoopGroup.singleton
        let promise = group.any().makePromise(of: WebSocket.self)
        do {
            try await WebSocket.connect(to: url, headers: headers, on: group) { socket in
                let decoder = StreamCoding.decoder()
                socket.onText { _, text in
                    if let frame = try? decoder.decode(Components.Schemas.StreamFrame.self, from: Data(text.utf8)) {
                        continuation.yield(.frame(frame))
                    }
                }
                socket.onClose.whenComplete { _ in
                    continuation.yield(.closed)
                    continuation.finish()
                }
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
