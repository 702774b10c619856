import NIOCore
import NIOPosix
import Synchronization

/// Where a messaging process runs its Swift concurrency: on the event loops that carry its
/// connections, instead of Swift's own thread pool.
///
/// A message through ``Messenger`` crosses between the two several times (a frame read on an
/// event loop wakes the stream's task on the pool, a send on the pool wakes the loop to write),
/// and on a machine with few cores each crossing is a thread put to sleep and another woken.
/// With the pool's jobs on the loops, work a loop starts continues on that loop (`relay-load kit
/// --concurrency pool` measures the difference). The relay keeps the pool: its message path runs
/// on its loops already.
///
/// It is SwiftNIO's own switch (`NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor`),
/// the one Vapor's template turns on for servers. It is process-wide and final, so it belongs to
/// the executable, not to the library: call it first thing in `main`, on the main thread.
/// Work that blocks a thread for long (a vault's gigabyte, a password hash) then holds up the
/// connections of that loop; a process that does such work beside serving pages, as `confidant
/// app` does, keeps the pool.
public enum EventLoopConcurrency {
    /// Moves the process's Swift concurrency onto the event loops; `false` when that is not
    /// possible here (the runtime's hook taken, or an unsupported platform), in which case
    /// nothing changed. A second call answers as the first did (NIO's switch stops the process
    /// when asked twice).
    @discardableResult
    public static func install() -> Bool {
        outcome.withLock { outcome in
            if let outcome { return outcome }
            let installed = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
            outcome = installed
            return installed
        }
    }

    private static let outcome = Mutex<Bool?>(nil)
}
