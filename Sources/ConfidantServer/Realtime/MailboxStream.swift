import ConfidantAPI
import Fluent
import Foundation
import NIOCore
import Vapor

/// `GET /v1/stream?after=CURSOR`: a WebSocket that replays the device's unacknowledged entries
/// after `after`, says `caughtUp`, then pushes new entries as they are stored. The client
/// acknowledges with `StreamAcknowledgement` frames; unacknowledged entries come again on the
/// next connection.
struct MailboxStream: Sendable {
    let context: RelayContext
    static let pageSize = 200

    func register(on app: Application) {
        app.get("v1", "stream") { request async throws -> Response in
            guard let caller = request.storage[CallerKey.self] else { throw APIFailure.unauthenticated }
            let text = request.query[String.self, at: "after"] ?? "0"
            guard let after = Int64(text), after >= 0 else { throw APIFailure.malformed("`after` must be a cursor (an integer ≥ 0).") }
            return request.webSocket(maxFrameSize: .init(integerLiteral: 1 << 16)) { request, socket in
                await run(socket, caller: caller, after: after, db: request.application.db, logger: request.logger)
            }
        }
    }

    private func run(_ socket: WebSocket, caller: Caller, after: Int64, db: any Database, logger: Logger) async {
        let (token, wakes) = await context.hub.subscribe(caller.address)
        let hub = context.hub, context = context
        socket.onClose.whenComplete { _ in Task { await hub.unsubscribe(caller.address, token: token) } }
        let decoder = StreamCoding.decoder()
        socket.onText { socket, text async in
            guard let acknowledgement = try? decoder.decode(Components.Schemas.StreamAcknowledgement.self, from: Data(text.utf8)) else {
                try? await socket.send(Self.problem("malformed_request", "Send {\"cursors\": [..]} to acknowledge."))
                return
            }
            do {
                _ = try await RelayAPI.acknowledge(acknowledgement.cursors, for: caller.address, context: context, on: db)
            } catch {
                try? await socket.send(Self.problem("ack_failed", "\(error)"))
            }
        }
        let encoder = StreamCoding.encoder()
        var lastSent = after
        var caughtUp = false
        do {
            for await _ in wakes {
                while !socket.isClosed {
                    let page = try await MailboxQueries.page(of: caller.address, after: lastSent, limit: Self.pageSize, on: db)
                    for row in page {
                        let frame = Components.Schemas.StreamFrame(entry: try RelayAPI.entry(row))
                        try await socket.send(String(decoding: try encoder.encode(frame), as: UTF8.self))
                        lastSent = row.cursor
                    }
                    if page.count < Self.pageSize { break }
                }
                if !caughtUp {
                    caughtUp = true
                    try await socket.send(String(decoding: try encoder.encode(Components.Schemas.StreamFrame(caughtUp: true)), as: UTF8.self))
                }
                if socket.isClosed { break }
            }
        } catch {
            logger.debug("stream ended", metadata: ["error": "\(String(reflecting: type(of: error)))"])
        }
        await hub.unsubscribe(caller.address, token: token)
        try? await socket.close()
    }

    private static func problem(_ code: String, _ message: String) -> String {
        let body = ["error": code, "message": message]
        return (try? JSONEncoder().encode(body)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
