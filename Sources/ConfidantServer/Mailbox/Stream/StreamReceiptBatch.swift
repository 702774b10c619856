import ConfidantAPI
import NIOCore

/// The receipts one connection gets in one turn of its event loop, sent together as binary
/// receipt frames (`receipts=binary`, docs/PROTOCOL.md §7.4) once the turn's other work is done.
/// A group commit answers every send of a connection it stored in one hand-over to the
/// connection's loop (`MailboxWriter.GroupResults`): those answers become one frame instead of a
/// text frame each, with its text, promise and write.
final class StreamReceiptBatch: Sendable {
    let eventLoop: any EventLoop
    private let pending: NIOLoopBoundBox<[StreamReceiptFrame.Receipt]>
    private let send: @Sendable ([StreamReceiptFrame.Receipt]) -> Void

    /// `send` gets the receipts of a turn, in the order they were added, on the event loop.
    init(eventLoop: any EventLoop, send: @escaping @Sendable ([StreamReceiptFrame.Receipt]) -> Void) {
        self.eventLoop = eventLoop
        pending = NIOLoopBoundBox([], eventLoop: eventLoop)
        self.send = send
    }

    /// Adds a receipt to the frame of this turn, which goes once the turn's other work is done.
    func add(_ receipt: StreamReceiptFrame.Receipt) {
        guard eventLoop.inEventLoop else {
            eventLoop.execute { self.add(receipt) }
            return
        }
        pending.value.append(receipt)
        guard pending.value.count == 1 else { return }
        eventLoop.execute {
            let receipts = self.pending.value
            self.pending.value = []
            self.send(receipts)
        }
    }
}
