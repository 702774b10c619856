import NIOCore

/// Runs a task's jobs on one NIO event loop.
///
/// A write to SQLite is a series of statements, and SQLiteNIO answers each on its connection's
/// event loop. A task that prefers this executor resumes on that same thread after every
/// answer; on Swift's global executor each answer would first wake one of its threads — one
/// more thread wake-up per statement (docs/BENCHMARKS.md: about a tenth of the server's CPU per
/// message with 32 pairs sending).
final class EventLoopTaskExecutor: TaskExecutor {
    private let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // From the loop's own thread this queues without waking anything.
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
