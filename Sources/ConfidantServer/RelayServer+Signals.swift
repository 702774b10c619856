import Dispatch
import Foundation

extension RelayServer {
    /// Starts listening, tells `listening` the bound port, and serves until SIGINT or SIGTERM;
    /// then stops accepting, lets requests in flight finish and shuts down. Returns the signal.
    @discardableResult
    public func runUntilSignalled(listening: (Int) -> Void) async throws -> String {
        let signals = SignalWaiter()
        listening(try await start())
        let signal = await signals.next()
        await shutdown()
        return signal
    }
}

/// Waits for SIGINT or SIGTERM without letting them kill the process.
private final class SignalWaiter {
    private let sources: [any DispatchSourceSignal]
    private let stream: AsyncStream<String>

    init() {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        self.stream = stream
        sources = [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")].map { number, name in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(name) }
            source.resume()
            return source
        }
    }

    func next() async -> String {
        for await name in stream { return name }
        return "end"
    }
}
