import Synchronization

/// Whether a stream's frame (a send or an acknowledgement) may be taken at once on the
/// connection's event loop, or must wait its turn in the stream's frame task (`StreamSession`).
///
/// Requests a connection makes one after another reach the writer in that order, so a frame is
/// taken at once only when the frame task has no frame before it. Nothing is taken at once before the
/// proof is accepted. Why take any at once: the task is one more hand-over between
/// threads for every frame (event loop → Swift's cooperative pool → the writer's thread), and
/// with one message in flight each hand-over is a thread woken up (docs/BENCHMARKS.md).
final class StreamFrameOrder: Sendable {
    private let queued = Atomic<Int>(0)
    private let proven = Atomic<Bool>(false)

    /// On the event loop, before a frame goes to the task.
    func enqueue() {
        queued.wrappingAdd(1, ordering: .sequentiallyConsistent)
    }

    /// The task is done with a frame: it is with the writer, or answered.
    func finished() {
        queued.wrappingSubtract(1, ordering: .sequentiallyConsistent)
    }

    /// The task accepted the stream's proof.
    func prove() {
        proven.store(true, ordering: .sequentiallyConsistent)
    }

    /// On the event loop: whether a frame that arrives now may be taken at once. Frames arrive
    /// on that one loop, so none can overtake it while it is taken.
    var mayTakeAtOnce: Bool {
        proven.load(ordering: .sequentiallyConsistent) && queued.load(ordering: .sequentiallyConsistent) == 0
    }
}
