import ConfidantAPI
import ConfidantCrypto
import Foundation
import WebSocketKit

/// Sends message batches over the live stream (a binary `StreamSendFrame` where the relay takes
/// one, else `StreamRequest.send`) and waits for each one's
/// `receipt` or `refused` frame — the relay's cheap path, about a tenth of the server's work of
/// one HTTP request per message. Without a connection it says so, and the caller posts over HTTP.
actor StreamSender {
    /// Not connected, or the connection dropped before the answer came.
    struct Unavailable: Error {}

    private var socket: WebSocket?
    /// The relay announced binary send frames (`StreamSendFrame`) with its challenge.
    private var sendsBinary = false
    private var waiting: [String: CheckedContinuation<Components.Schemas.MessageReceipt, any Error>] = [:]
    private let encoder = StreamCoding.encoder()

    var isConnected: Bool { socket != nil }

    /// Sends go over `socket` from now on: its proof has been sent. `binarySendVersions`: what
    /// the relay's challenge listed.
    func attach(_ socket: WebSocket, binarySendVersions versions: [Int]) {
        self.socket = socket
        sendsBinary = versions.contains(Int(StreamSendFrame.version))
    }

    /// The connection is gone: whatever waits for an answer is sent again by its caller.
    func detach() {
        socket = nil
        let waiting = waiting
        self.waiting = [:]
        for continuation in waiting.values { continuation.resume(throwing: Unavailable()) }
    }

    /// Sends the batch and waits for the relay's answer: its receipt, or the refusal as
    /// `ConfidantKitError.server`. Throws `Unavailable` when there is no connection.
    func send(_ batch: Components.Schemas.MessageBatch) async throws -> Components.Schemas.MessageReceipt {
        guard let socket else { throw Unavailable() }
        let key = batch.messageId.lowercased()
        guard waiting[key] == nil else { throw Unavailable() }
        // Binary when the relay takes it: the envelope headers already name each recipient and
        // the message, and the relay reads them without JSON or base64 (docs/PROTOCOL.md §7.2).
        let write: @Sendable (WebSocket) -> Void
        if sendsBinary {
            let frame = try StreamSendFrame(envelopes: batch.envelopes.map { Data($0.envelope.data) }).serialized()
            write = { $0.send(raw: frame, opcode: .binary, promise: nil) }
        } else {
            let frame = String(
                decoding: try encoder.encode(Components.Schemas.StreamRequest(send: batch)), as: UTF8.self)
            write = { $0.send(frame, promise: nil) }
        }
        return try await withCheckedThrowingContinuation { continuation in
            waiting[key] = continuation
            write(socket)
        }
    }

    func resolve(_ receipt: Components.Schemas.MessageReceipt) {
        waiting.removeValue(forKey: receipt.messageId.lowercased())?.resume(returning: receipt)
    }

    func resolve(_ refused: Components.Schemas.StreamRefusal) {
        let code = APIErrorCode(code: refused.error)
        waiting.removeValue(forKey: refused.messageId.lowercased())?
            .resume(throwing: ConfidantKitError.server(status: code.httpStatus, code: code, message: refused.message))
    }
}
