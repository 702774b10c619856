import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ConfidantServer

/// The one-writer gate, taken by tasks (Fluent's writes) and by the write connection's thread.
@Suite("Write gate")
struct WriteGateTests {
    @Test("a thread and a task waiting for the gate get it in the order they came, one at a time")
    func fifoAcrossThreadsAndTasks() async {
        let gate = WriteGate()
        let order = Mutex<[String]>([])
        let inside = Atomic<Int>(0)
        let most = Atomic<Int>(0)
        @Sendable func hold(_ name: String) {
            let now = inside.add(1, ordering: .sequentiallyConsistent).newValue
            _ = most.max(now, ordering: .sequentiallyConsistent)
            order.withLock { $0.append(name) }
            inside.subtract(1, ordering: .sequentiallyConsistent)
            gate.release()
        }
        await gate.acquire()
        let threadDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            gate.acquireBlocking()
            hold("thread")
            threadDone.signal()
        }
        while gate.waiting < 1 { await Task.yield() }
        let task = Task {
            await gate.acquire()
            hold("task")
        }
        while gate.waiting < 2 { await Task.yield() }
        order.withLock { $0.append("first") }
        gate.release()
        await task.value
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                threadDone.wait()
                continuation.resume()
            }
        }
        #expect(order.withLock { $0 } == ["first", "thread", "task"])
        #expect(most.load(ordering: .sequentiallyConsistent) == 1)
        // Free again: taken at once, from either side.
        gate.acquireBlocking()
        gate.release()
        await gate.acquire()
        #expect(gate.waiting == 0)
        gate.release()
    }
}
