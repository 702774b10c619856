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

/// `BenchStream.pump`'s state: which frame goes next and how many wait for their receipt. Used
/// on the socket's event loop (receipts are read there too).
final class SendPump: Sendable {
    private let frames: [(id: UUID, frame: BenchSendFrame)]
    private let window: Int
    private let socket: BenchSocket
    private let stamp: @Sendable (UUID) -> Void
    private let state: Mutex<(next: Int, inFlight: Int, done: CheckedContinuation<Void, Never>?)>

    init(
        frames: [(id: UUID, frame: BenchSendFrame)], window: Int, socket: BenchSocket,
        stamp: @escaping @Sendable (UUID) -> Void, done: CheckedContinuation<Void, Never>
    ) {
        self.frames = frames
        self.window = window
        self.socket = socket
        self.stamp = stamp
        state = Mutex((0, 0, done))
    }

    func answered() {
        state.withLock { $0.inFlight -= 1 }
        fill()
    }

    /// Sends until `window` wait; resumes the caller once all are sent and answered.
    func fill() {
        while true {
            let next: (id: UUID, frame: BenchSendFrame)? = state.withLock { state in
                guard state.inFlight < window, state.next < frames.count else { return nil }
                defer {
                    state.next += 1
                    state.inFlight += 1
                }
                return frames[state.next]
            }
            guard let next else { break }
            stamp(next.id)
            switch next.frame {
            case .text(let text): socket.send(text: text)
            case .binary(let bytes): socket.send(binary: bytes)
            }
        }
        let finished = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.next == frames.count, state.inFlight == 0 else { return nil }
            defer { state.done = nil }
            return state.done
        }
        finished?.resume()
    }
}

/// A counting semaphore for sends waiting for their receipt.
final class SendWindow: Sendable {
    private struct State {
        var available: Int
        let size: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>
    /// While a `SendPump` drives the sends, each receipt goes to it instead. (A class, not a
    /// closure: a closure in a `Mutex` is wrapped in two more reabstraction thunks by every
    /// `withLock`, so each receipt took longer than the one before.)
    private let diverted = Mutex<SendPump?>(nil)

    init(size: Int) { state = Mutex(State(available: max(1, size), size: max(1, size))) }

    var size: Int { state.withLock { $0.size } }

    /// From now on a receipt (or refusal) goes to `pump` instead of freeing a place.
    func divert(to pump: SendPump) {
        diverted.withLock { $0 = pump }
    }

    func acquire() async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
                guard state.available > 0 else {
                    state.waiters.append(continuation)
                    return false
                }
                state.available -= 1
                return true
            }
            if ready { continuation.resume() }
        }
    }

    func release() {
        if let pump = diverted.withLock({ $0 }) { return pump.answered() }
        let (waiter, idle) = state.withLock {
            state -> (CheckedContinuation<Void, Never>?, [CheckedContinuation<Void, Never>]) in
            if !state.waiters.isEmpty { return (state.waiters.removeFirst(), []) }
            state.available = min(state.size, state.available + 1)
            guard state.available == state.size else { return (nil, []) }
            defer { state.idleWaiters = [] }
            return (nil, state.idleWaiters)
        }
        waiter?.resume()
        for continuation in idle { continuation.resume() }
    }

    func waitUntilIdle() async {
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state in
                guard state.available == state.size else {
                    state.idleWaiters.append(continuation)
                    return false
                }
                return true
            }
            if idle { continuation.resume() }
        }
    }
}
