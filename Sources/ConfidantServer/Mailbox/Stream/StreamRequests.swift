import ConfidantAPI
import ConfidantCrypto
import Foundation
import Logging
import NIOCore
import Synchronization

/// A frame from the client: a `StreamRequest` in JSON, or a binary send frame.
enum IncomingFrame: Sendable {
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

/// What one stream does with the frames its client sends: the proof first, then
/// acknowledgements and sends, each answered on the socket without waiting for it to be written.
struct StreamRequests: Sendable {
    let caller: Caller
    let mailbox: MailboxService
    let socket: StreamSocket
    let proof: StreamProof
    let outages: OutageLog
    let maximumEnvelopeBytes: Int
    let identity: @Sendable (DeviceAddress) async throws -> PublicIdentity?
    let logger: Logger
    private let decoder = StreamCoding.decoder()
    private let encoder = StreamCoding.encoder()
    private let inFlight = InFlightCount()
    private let unwritten = ByteBudget(limit: MailboxStream.maximumUnwrittenAnswerBytes)
    /// Receipts as binary frames, for a client that asked for them (`receipts=binary`).
    private let binaryReceipts: StreamReceiptBatch?

    init(
        caller: Caller, mailbox: MailboxService, socket: StreamSocket, proof: StreamProof, outages: OutageLog,
        maximumEnvelopeBytes: Int, binaryReceipts: Bool,
        identity: @escaping @Sendable (DeviceAddress) async throws -> PublicIdentity?, logger: Logger
    ) {
        self.caller = caller
        self.mailbox = mailbox
        self.socket = socket
        self.proof = proof
        self.outages = outages
        self.maximumEnvelopeBytes = maximumEnvelopeBytes
        self.identity = identity
        self.logger = logger
        let unwritten = unwritten
        self.binaryReceipts =
            binaryReceipts
            ? StreamReceiptBatch(eventLoop: socket.eventLoop) { [socket] receipts in
                Self.sendFrames(of: receipts, to: socket, budget: unwritten)
            } : nil
    }

    /// Handles one frame; false when the stream must end (no proof, or a refused one).
    func take(_ frame: IncomingFrame, proven: inout Bool) async -> Bool {
        switch frame {
        case .binary(let buffer):
            // A binary frame is a send, never the proof: before the proof it ends the stream.
            guard proven else {
                proof.decide(.refused)
                return false
            }
            takeSend(buffer)
        case .text(let text):
            guard proven else {
                // The first frame must be the proof; anything else ends the stream.
                guard let signature = decode(text)?.proof else {
                    proof.decide(.refused)
                    return false
                }
                guard await check(signature.data) else { return false }
                proven = true
                return true
            }
            takeRequest(text)
        }
        return true
    }

    private func decode(_ text: String) -> Components.Schemas.StreamRequest? {
        if let cursors = StreamAcknowledgementText.cursors(text) { return .init(cursors: cursors) }
        return try? decoder.decode(Components.Schemas.StreamRequest.self, from: Data(text.utf8))
    }

    /// A text frame of a proven stream: acknowledgements go to the writer, a JSON send is
    /// handed over as `takeSend` hands a binary one. Nothing here waits, so the connection's
    /// event loop may call it (`StreamFrameOrder`).
    func takeRequest(_ text: String) {
        guard let request = decode(text) else {
            reply(
                MailboxStream.problem(
                    .malformedRequest,
                    "Send {\"cursors\": [..]} to acknowledge or {\"send\": {..}} (a MessageBatch) to send."))
            return
        }
        if let cursors = request.cursors {
            do {
                try mailbox.enqueueAcknowledgement(cursors, for: caller.address, on: socket.eventLoop) { [self] error in
                    let failure = APIFailure.reported(error, outages: outages, logger: logger)
                    reply(MailboxStream.problem(failure.code, failure.message))
                }
            } catch {
                reply(MailboxStream.problem(error.code, error.message))
            }
        }
        if let batch = request.send {
            do {
                send(
                    try MailboxSubmission(batch, from: caller.address, maximumEnvelopeBytes: maximumEnvelopeBytes),
                    messageID: batch.messageId)
            } catch {
                refuse(batch.messageId, error)
            }
        }
    }

    /// Checks the stream's proof against the device's current key and says how it went.
    private func check(_ signature: some DataProtocol) async -> Bool {
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
            return false
        }
        guard let identity, proof.verifies(signature, by: identity, of: caller.address) else {
            proof.decide(.refused)
            return false
        }
        proof.decide(.proven)
        return true
    }

    /// A binary send frame of a proven stream (versions 1 and 2, or a shared one, version 3):
    /// handed to the writer, or answered with why not. Nothing here waits, so the connection's
    /// event loop may call it (`StreamFrameOrder`).
    func takeSend(_ buffer: ByteBuffer) {
        let bytes = buffer.getBytes(at: buffer.readerIndex, length: buffer.readableBytes) ?? []
        let submission: Result<MailboxSubmission, APIFailure>
        // The id a refusal names: the (first) envelope's, if its header can be read.
        let messageID: () -> UUID?
        do throws(StreamSendFrameError) {
            if bytes.first == SharedSendFrame.version {
                let frame = try SharedSendFrame(serialized: bytes)
                messageID = { try? GroupEnvelope(serialized: frame.envelope).messageID }
                submission = Result { () throws(APIFailure) in
                    try MailboxSubmission(frame, from: caller.address, maximumEnvelopeBytes: maximumEnvelopeBytes)
                }
            } else {
                let frame = try StreamSendFrame(serialized: bytes)
                messageID = { frame.envelopes.first.flatMap { try? EnvelopeRoute(serialized: $0) }?.messageID }
                submission = Result { () throws(APIFailure) in
                    try MailboxSubmission(frame, from: caller.address, maximumEnvelopeBytes: maximumEnvelopeBytes)
                }
            }
        } catch {
            reply(MailboxStream.problem(.malformedRequest, error.description))
            return
        }
        switch submission {
        case .success(let submission): send(submission, messageID: nil)
        case .failure(let error):
            if let id = messageID() {
                refuse(id.canonicalString, error)
            } else {
                reply(MailboxStream.problem(error.code, error.message))
            }
        }
    }

    /// Admits a send and hands it to the writer; a text answer names `messageID` as the client
    /// wrote it (nil for a binary send: the id's canonical text, written only if a text answer
    /// needs it).
    private func send(_ submission: MailboxSubmission, messageID written: String?) {
        let id = submission.messageID
        var messageID: String { written ?? id.canonicalString }
        do {
            try mailbox.admit(submission)
        } catch {
            refuse(messageID, error)
            return
        }
        guard inFlight.begin(limit: MailboxStream.maximumInFlight) else {
            refuse(
                messageID,
                APIFailure(
                    .tooManyInFlight,
                    "More than \(MailboxStream.maximumInFlight) sends wait for their receipt; wait for some before sending more."
                ))
            return
        }
        mailbox.enqueueSend(submission, replyingOn: socket.eventLoop) { [self] result in
            inFlight.end()
            switch result {
            case .success(let receipt):
                // The binary form names the message by its 16 bytes, as `MailboxSubmission` read
                // them (it refused a JSON send whose id is not a UUID's text).
                if let binaryReceipts, let stored = UInt16(exactly: receipt.stored) {
                    binaryReceipts.add(
                        StreamReceiptFrame.Receipt(
                            messageID: id, stored: stored, duplicate: receipt.duplicate,
                            receivedAtMilliseconds: StreamDeliveryForm.milliseconds(receipt.receivedAt)))
                } else {
                    answer(.init(receipt: receipt.wire(messageID: messageID)))
                }
            case .failure(let error):
                refuse(messageID, APIFailure.reported(error, outages: outages, logger: logger))
            }
        }
    }

    /// Sends an answer without waiting for it to be written.
    private func reply(_ text: String) {
        Self.writeAnswer(of: text.utf8.count, to: socket, budget: unwritten) { [socket] in
            socket.send(text, promise: $0)
        }
    }

    /// Receipts as binary frames of up to `StreamReceiptFrame.maximumReceipts` each, counted
    /// against the budget of unwritten answers as text answers are.
    private static func sendFrames(
        of receipts: [StreamReceiptFrame.Receipt], to socket: StreamSocket, budget: ByteBudget
    ) {
        var rest = receipts[...]
        while !rest.isEmpty {
            let some = rest.prefix(StreamReceiptFrame.maximumReceipts)
            rest = rest.dropFirst(some.count)
            guard let frame = try? StreamReceiptFrame(receipts: Array(some)) else { continue }
            let bytes = frame.serialized()
            let written = writeAnswer(of: bytes.count, to: socket, budget: budget) {
                socket.send(binary: ByteBuffer(bytes: bytes), promise: $0)
            }
            guard written else { return }
        }
    }

    /// Writes an answer of `count` bytes with `write`, its bytes taken from `budget` until it is
    /// written; a client that leaves more than the budget unread is closed instead of queued
    /// for (false).
    @discardableResult
    private static func writeAnswer(
        of count: Int, to socket: StreamSocket, budget: ByteBudget, _ write: (EventLoopPromise<Void>) -> Void
    ) -> Bool {
        guard budget.take(count) else {
            _ = socket.close(code: .policyViolation)
            return false
        }
        let written = socket.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { _ in budget.give(count) }
        write(written)
        return true
    }

    private func answer(_ frame: Components.Schemas.StreamFrame) {
        if let receipt = frame.receipt, let text = try? StreamFrameText.receipt(receipt) {
            reply(text)
        } else if let data = try? encoder.encode(frame) {
            reply(String(decoding: data, as: UTF8.self))
        }
    }

    private func refuse(_ messageID: String, _ failure: APIFailure) {
        answer(.init(refused: .init(messageId: messageID, error: failure.code.rawValue, message: failure.message)))
    }
}

extension MailboxStream {
    /// A bare `{"error", "message"}` answer.
    static func problem(_ code: APIErrorCode, _ message: String) -> String {
        let body = ["error": code.rawValue, "message": message]
        return (try? JSONEncoder().encode(body)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
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
