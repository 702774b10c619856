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
    /// It announced version 2, sends that name the message they follow.
    private var takesOrdered = false
    /// It announced version 3, shared sends (`SharedSendFrame`).
    private var takesShared = false
    /// Sends written and not answered yet, and who waits for each.
    private var inFlight: [String: Waiter?] = [:]
    /// The send whose waiter also wakes, with no answer, when ``nudge()`` says there is more to
    /// send (``answerOrNudge(_:)``).
    private var nudgeable: String?
    /// Answers that came before anyone asked for them (`start`, then `answer`).
    private var answered: [String: Result<Components.Schemas.MessageReceipt, any Error>] = [:]
    private let encoder = StreamCoding.encoder()

    var isConnected: Bool { socket != nil }

    /// Whether sends may name the message they follow (`start(_:after:)`): connected to a relay
    /// that takes version 2 binary send frames.
    var sendsOrdered: Bool { socket != nil && sendsBinary && takesOrdered }

    /// Sends go over `socket` from now on: its proof has been sent. `binarySendVersions`: what
    /// the relay's challenge listed.
    func attach(_ socket: WebSocket, binarySendVersions versions: [Int]) {
        self.socket = socket
        sendsBinary = versions.contains(Int(StreamSendFrame.version))
        takesOrdered = versions.contains(Int(StreamSendFrame.orderedVersion))
        takesShared = versions.contains(Int(SharedSendFrame.version))
    }

    /// The connection is gone: whatever waits for an answer is sent again by its caller.
    func detach() {
        socket = nil
        let inFlight = inFlight
        self.inFlight = [:]
        nudgeable = nil
        for (key, waiter) in inFlight {
            if let waiter {
                waiter.resume(with: .failure(Unavailable()))
            } else {
                answered[key] = .failure(Unavailable())
            }
        }
    }

    /// Sends the batch and waits for the relay's answer: its receipt, or the refusal as
    /// `ConfidantKitError.server`. Throws `Unavailable` when there is no connection.
    func send(_ batch: Components.Schemas.MessageBatch) async throws -> Components.Schemas.MessageReceipt {
        try await answer(try start(batch, after: nil))
    }

    /// Sends one group envelope for many devices (`SharedSendFrame`) and waits for the relay's
    /// answer. Throws `Unavailable` without a connection to a relay that takes shared frames.
    func sendShared(_ frame: SharedSendFrame, messageID: UUID) async throws -> Components.Schemas.MessageReceipt {
        guard let socket, takesShared else { throw Unavailable() }
        let key = try freeKey(for: messageID.canonicalString)
        socket.send(raw: frame.serialized(), opcode: .binary, promise: nil)
        inFlight[key] = .some(nil)
        return try await answer(key)
    }

    /// Writes the batch and returns at once, with the key to ask `answer` for. `after`: the
    /// message it must follow (a version 2 frame, only where `sendsOrdered`), so that several
    /// can be on their way and none overtakes one the relay refuses (docs/PROTOCOL.md §7.2).
    func start(_ batch: Components.Schemas.MessageBatch, after: UUID?) throws -> String {
        guard let socket, after == nil || sendsOrdered else { throw Unavailable() }
        let key = try freeKey(for: batch.messageId)
        // Binary when the relay takes it: the envelope headers already name each recipient and
        // the message, and the relay reads them without JSON or base64 (docs/PROTOCOL.md §7.2).
        if sendsBinary {
            let frame = try StreamSendFrame(envelopes: batch.envelopes.map { Data($0.envelope.data) }, after: after)
                .serialized()
            socket.send(raw: frame, opcode: .binary, promise: nil)
        } else {
            let frame = String(
                decoding: try encoder.encode(Components.Schemas.StreamRequest(send: batch)), as: UTF8.self)
            socket.send(frame, promise: nil)
        }
        inFlight[key] = .some(nil)
        return key
    }

    /// The key a send of `messageID` waits under; `Unavailable` while one under it is unanswered
    /// or its answer not taken (a second send would take the first one's answer).
    private func freeKey(for messageID: String) throws -> String {
        let key = messageID.lowercased()
        guard inFlight.index(forKey: key) == nil, answered[key] == nil else { throw Unavailable() }
        return key
    }

    /// Waits for the answer to a send `start` wrote.
    func answer(_ key: String) async throws -> Components.Schemas.MessageReceipt {
        if let result = answered.removeValue(forKey: key) { return try result.get() }
        guard inFlight.index(forKey: key) != nil else { throw Unavailable() }
        return try await withCheckedThrowingContinuation { continuation in
            inFlight[key] = .answer(continuation)
        }
    }

    /// ``answer(_:)``, or nil as soon as ``nudge()`` says there is more to send meanwhile: the
    /// window of sends fills its free places without waiting for its oldest answer. The answer
    /// stays to be asked for again.
    func answerOrNudge(_ key: String) async throws -> Components.Schemas.MessageReceipt? {
        if let result = answered.removeValue(forKey: key) { return try result.get() }
        guard inFlight.index(forKey: key) != nil else { throw Unavailable() }
        return try await withCheckedThrowingContinuation { continuation in
            inFlight[key] = .answerOrNudge(continuation)
            nudgeable = key
        }
    }

    /// Whether someone waits in ``answerOrNudge(_:)`` now.
    var awaitsNudge: Bool { nudgeable != nil }

    /// There is more to send: whoever waits in ``answerOrNudge(_:)`` goes on without its answer.
    func nudge() {
        guard let key = nudgeable else { return }
        nudgeable = nil
        guard case .answerOrNudge(let continuation)?? = inFlight[key] else { return }
        inFlight[key] = .some(nil)
        continuation.resume(returning: nil)
    }

    /// The answer to a send `start` wrote, if it has come; nil while it has not.
    func answerIfArrived(_ key: String) -> Result<Components.Schemas.MessageReceipt, any Error>? {
        answered.removeValue(forKey: key)
    }

    func resolve(_ receipt: Components.Schemas.MessageReceipt) {
        settle(receipt.messageId.lowercased(), .success(receipt))
    }

    /// A binary receipt frame's receipts, in one turn of the actor.
    func resolve(_ receipts: [Components.Schemas.MessageReceipt]) {
        for receipt in receipts { resolve(receipt) }
    }

    func resolve(_ refused: Components.Schemas.StreamRefusal) {
        let code = APIErrorCode(code: refused.error)
        settle(
            refused.messageId.lowercased(),
            .failure(ConfidantKitError.server(status: code.httpStatus, code: code, message: refused.message)))
    }

    private func settle(_ key: String, _ result: Result<Components.Schemas.MessageReceipt, any Error>) {
        guard let waiter = inFlight.removeValue(forKey: key) else { return }
        if nudgeable == key { nudgeable = nil }
        if let waiter {
            waiter.resume(with: result)
        } else {
            answered[key] = result
        }
    }

    /// Who waits for a send's answer.
    private enum Waiter {
        case answer(CheckedContinuation<Components.Schemas.MessageReceipt, any Error>)
        case answerOrNudge(CheckedContinuation<Components.Schemas.MessageReceipt?, any Error>)

        func resume(with result: Result<Components.Schemas.MessageReceipt, any Error>) {
            switch self {
            case .answer(let continuation): continuation.resume(with: result)
            case .answerOrNudge(let continuation): continuation.resume(with: result.map { $0 })
            }
        }
    }
}
