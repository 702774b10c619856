import ArgumentParser
import AsyncHTTPClient
import ConfidantAPI
import ConfidantCrypto
import ConfidantKit
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import Synchronization
import WebSocketKit

/// A benchmark user's WebSocket: hands each entry to `onEntry` and acknowledges in batches; as a
/// sender, sends message batches with at most `window` of them waiting for their receipt.
final class BenchStream: Sendable {
    private let socket: BenchSocket
    private let caughtUpSignal: AsyncStream<Void>
    private let window: SendWindow

    private init(socket: BenchSocket, caughtUpSignal: AsyncStream<Void>, window: SendWindow) {
        self.socket = socket
        self.caughtUpSignal = caughtUpSignal
        self.window = window
    }

    static func connect(
        port: Int, user: BenchUser, from source: String? = nil, on group: any EventLoopGroup, window: Int = 1,
        deliveries: DeliveryForm = .binary, receipts: DeliveryForm = .binary, after: Int64 = 0,
        onEntry: @escaping @Sendable (BenchFrame.Entry) -> Void = { _ in },
        onRefused: @escaping @Sendable (Components.Schemas.StreamRefusal) -> Void = { _ in }
    ) async throws -> BenchStream {
        let (signal, continuation) = AsyncStream<Void>.makeStream()
        var headers = HTTPHeaders()
        headers.add(name: .authorization, value: "Bearer \(user.token)")
        let pending = LockedBox<[Int64]>([])
        let sendWindow = SendWindow(size: window)
        let decoder = JSONDecoder()
        // Acknowledges every 50 entries, as they come.
        let take: @Sendable (BenchSocket, [BenchFrame.Entry]) -> Void = { socket, entries in
            guard !entries.isEmpty else { return }
            for entry in entries { onEntry(entry) }
            let batch: [Int64]? = pending.withLock { list in
                list += entries.map(\.cursor)
                guard list.count >= 50 else { return nil }
                defer { list = [] }
                return list
            }
            if let batch,
                let data = try? StreamCoding.encoder().encode(Components.Schemas.StreamRequest(cursors: batch))
            {
                socket.send(text: String(decoding: data, as: UTF8.self))
            }
        }
        // Entries several to a frame, as ConfidantKit asks for them; such a frame (or one large
        // entry) is more than NIO's default limit of 16 KiB.
        let socket = try await BenchSocket.connect(
            port: port,
            target:
                "/v1/stream?batched=true&deliveries=\(deliveries.rawValue)&receipts=\(receipts.rawValue)&after=\(after)",
            headers: headers,
            maximumFrameBytes: 1 << 23, from: source, on: group,
            onText: { socket, text in
                guard let frame = BenchFrame.scan(text) ?? (try? decoder.decode(BenchFrame.self, from: Data(text.utf8)))
                else { return }
                // The stream opens with a challenge that the device's key signs.
                if let challenge = frame.challenge.flatMap({ Data(base64Encoded: $0) }),
                    let proof = try? StreamCoding.encoder().encode(
                        Components.Schemas.StreamRequest(
                            answering: .init(challenge),
                            as: DeviceAddress(userID: user.id, deviceID: user.identity.deviceID),
                            identity: user.identity))
                {
                    socket.send(text: String(decoding: proof, as: UTF8.self))
                }
                if frame.caughtUp == true { continuation.yield() }
                if frame.receipt != nil { sendWindow.release() }
                if let refused = frame.refused {
                    onRefused(refused)
                    sendWindow.release()
                }
                take(socket, (frame.entry.map { [$0] } ?? []) + (frame.entries ?? []))
            },
            onBinary: { socket, buffer in
                if let count = BenchFrame.receiptCount(binary: buffer) {
                    for _ in 0..<count { sendWindow.release() }
                    return
                }
                take(socket, BenchFrame.scan(binary: buffer) ?? [])
            })
        return BenchStream(socket: socket, caughtUpSignal: signal, window: sendWindow)
    }

    func caughtUp() async throws {
        for await _ in caughtUpSignal { return }
        throw ValidationError("A stream closed before it caught up.")
    }

    /// Sends a frame once fewer than `window` sends wait for their receipt.
    func send(frame: BenchSendFrame) async throws {
        await window.acquire()
        switch frame {
        case .text(let text): socket.send(text: text)
        case .binary(let bytes): socket.send(binary: bytes)
        }
    }

    /// Sends `frames` from the socket's event loop — `window` of them at first, then one as each
    /// receipt (or refusal) arrives — and returns when the last has its receipt. Without a task
    /// resumed per send and per receipt, the generator needs less of the two cores it shares with
    /// the relay; ejabberd's client (an asyncio loop) sends the same way. `stamp` runs just before
    /// each send.
    func pump(_ frames: [(id: UUID, frame: BenchSendFrame)], stamp: @escaping @Sendable (UUID) -> Void) async {
        guard !frames.isEmpty else { return }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let pump = SendPump(frames: frames, window: window.size, socket: socket, stamp: stamp, done: done)
            window.divert(to: pump)
            socket.eventLoop.execute { pump.fill() }
        }
    }

    /// Returns when every send has its receipt.
    func drained() async throws {
        await window.waitUntilIdle()
    }

    func close() async { await socket.close() }
}
