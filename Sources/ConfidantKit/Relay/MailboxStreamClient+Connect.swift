import ConfidantAPI
import ConfidantCrypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization
import WebSocketKit

extension MailboxStreamClient {
    /// Opens the socket and has its frames put in `inbox`; the session's token goes in the header.
    func connect(after cursor: Int64, inbox: FrameInbox) async throws -> WebSocket {
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
