import ConfidantAPI
import ConfidantTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import WebSocketKit

/// A test client for `/v1/stream`: collects frames, acknowledges and sends on request.
final class StreamClient: Sendable {
    let socket: WebSocket
    let frames: AsyncStream<Components.Schemas.StreamFrame>
    /// The codes of bare `{"error", "message"}` answers (frames the relay could not take).
    let problems: AsyncStream<String>
    /// How many binary delivery frames came (they are in `frames` as `entries` frames).
    let binaryFrames: Locked<Int>
    /// How many binary receipt frames came (their receipts are in `frames` as `receipt` frames).
    let receiptFrames: Locked<Int>

    private init(
        socket: WebSocket, frames: AsyncStream<Components.Schemas.StreamFrame>, problems: AsyncStream<String>,
        binaryFrames: Locked<Int>, receiptFrames: Locked<Int>
    ) {
        self.socket = socket
        self.frames = frames
        self.problems = problems
        self.binaryFrames = binaryFrames
        self.receiptFrames = receiptFrames
    }

    private struct Problem: Decodable {
        let error: String
        let message: String
    }

    /// Connects as `user`'s device and answers the stream's challenge with its key, unless
    /// `proving` is false (then the stream waits for a proof that never comes); `batched` asks for
    /// `entries` frames, `binary` for binary delivery frames and `binaryReceipts` for binary
    /// receipt frames (a malformed frame ends `frames`).
    static func connect(
        port: Int, user: TestUser, after: Int64 = 0, proving: Bool = true, batched: Bool = false, binary: Bool = false,
        binaryReceipts: Bool = false
    ) async throws -> StreamClient {
        let binaryFrames = Locked(0)
        let receiptFrames = Locked(0)
        let (frames, continuation) = AsyncStream<Components.Schemas.StreamFrame>.makeStream()
        let (problems, problemInput) = AsyncStream<String>.makeStream()
        let promise = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: WebSocket.self)
        var headers = HTTPHeaders()
        headers.add(name: .authorization, value: "Bearer \(user.token)")
        // As ConfidantKit: an entry frame carries up to a 4 MiB envelope in base64, a batched one
        // several entries (WebSocketKit's default limit is 16 KiB).
        var configuration = WebSocketClient.Configuration()
        configuration.maxFrameSize = 1 << 23
        do {
            try await WebSocket.connect(
                to:
                    "ws://127.0.0.1:\(port)/v1/stream?after=\(after)\(batched ? "&batched=true" : "")\(binary ? "&deliveries=binary" : "")\(binaryReceipts ? "&receipts=binary" : "")",
                headers: headers,
                configuration: configuration, on: MultiThreadedEventLoopGroup.singleton
            ) { socket in
                socket.onText { socket, text in
                    if let problem = try? JSONDecoder().decode(Problem.self, from: Data(text.utf8)) {
                        problemInput.yield(problem.error)
                        return
                    }
                    if let frame = try? StreamCoding.decoder().decode(
                        Components.Schemas.StreamFrame.self, from: Data(text.utf8))
                    {
                        // A proving client answers the challenge and keeps it out of `frames`.
                        if let challenge = frame.challenge, proving {
                            if let proof = try? StreamCoding.encoder().encode(
                                Components.Schemas.StreamRequest(
                                    answering: challenge, as: user.address, identity: user.identity))
                            {
                                socket.send(String(decoding: proof, as: UTF8.self))
                            }
                            return
                        }
                        continuation.yield(frame)
                    }
                }
                socket.onBinary { socket, buffer in
                    if buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) == StreamReceiptFrame.kind {
                        guard let frame = try? StreamReceiptFrame(serialized: Data(buffer.readableBytesView)) else {
                            continuation.finish()
                            return
                        }
                        receiptFrames.value += 1
                        for receipt in frame.receipts {
                            continuation.yield(Components.Schemas.StreamFrame(receipt: receipt.messageReceipt))
                        }
                        return
                    }
                    guard let frame = try? StreamDeliveryFrame(serialized: Data(buffer.readableBytesView)) else {
                        continuation.finish()
                        return
                    }
                    binaryFrames.value += 1  // the callbacks come one at a time
                    continuation.yield(Components.Schemas.StreamFrame(entries: frame.entries.map(\.mailboxEntry)))
                }
                socket.onClose.whenComplete { _ in
                    continuation.finish()
                    problemInput.finish()
                }
                promise.succeed(socket)
            }.get()
        } catch {
            // Refused before the upgrade: nobody will take the promise.
            promise.fail(error)
            throw error
        }
        return StreamClient(
            socket: try await promise.futureResult.get(), frames: frames, problems: problems,
            binaryFrames: binaryFrames, receiptFrames: receiptFrames)
    }

    func acknowledge(_ cursors: [Int64]) async throws {
        let data = try StreamCoding.encoder().encode(Components.Schemas.StreamAcknowledgement(cursors: cursors))
        try await socket.send(String(decoding: data, as: UTF8.self))
    }

    /// Sends a message over the stream; its `receipt` or `refused` frame comes later.
    func send(_ batch: Components.Schemas.MessageBatch) async throws {
        try await sendText(
            String(
                decoding: try StreamCoding.encoder().encode(Components.Schemas.StreamRequest(send: batch)),
                as: UTF8.self))
    }

    func sendText(_ text: String) async throws { try await socket.send(text) }

    /// Sends the batch's envelopes as a binary send frame (docs/PROTOCOL.md §7.2).
    func sendBinary(_ batch: Components.Schemas.MessageBatch, after: UUID? = nil) async throws {
        try await sendBinary(
            try StreamSendFrame(envelopes: batch.envelopes.map { Data($0.envelope.data) }, after: after).serialized())
    }

    func sendBinary(_ bytes: Data) async throws { try await socket.send(raw: bytes, opcode: .binary) }

    func close() async { try? await socket.close() }
}

extension AsyncStream {
    /// How long a test waits for frames it expects: long, so that only a hang fails. A loaded CI
    /// machine (tests in parallel, each with its relay and PostgreSQL database) took more than 10 s
    /// to prove and catch up a stream on PostgreSQL. A test that expects nothing passes a short
    /// `within` of its own.
    static var expectedWithin: Double { 60 }

    /// The first element that satisfies `predicate`, or nil if the stream ends or `seconds` pass.
    func first(within seconds: Double = expectedWithin, where predicate: @escaping @Sendable (Element) -> Bool) async
        -> Element?
    where Element: Sendable {
        await withTaskGroup(of: Element?.self) { group in
            group.addTask {
                for await element in self where predicate(element) { return element }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// The next `count` elements, or fewer if the stream ends or `seconds` pass.
    func next(_ count: Int, within seconds: Double = expectedWithin) async -> [Element] where Element: Sendable {
        await withTaskGroup(of: [Element].self) { group in
            group.addTask {
                var collected: [Element] = []
                for await element in self {
                    collected.append(element)
                    if collected.count == count { break }
                }
                return collected
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return []
            }
            let first = await group.next() ?? []
            group.cancelAll()
            return first
        }
    }
}
