import Dispatch
import Foundation

extension RelayServer {
    /// Starts listening, tells `listening` the bound port, and serves until SIGINT or SIGTERM;
    /// then stops accepting, lets requests in flight finish and shuts down. Returns the signal.
    /// SIGHUP reloads the TLS certificate and key, telling `reloaded` how that went.
    @discardableResult
    public func runUntilSignalled(
        listening: (Int) -> Void, reloaded: @escaping @Sendable (TLSFilesError?) -> Void = { _ in }
    ) async throws -> String {
        let signals = SignalWaiter()
        listening(try await start())
        while true {
            let signal = await signals.next()
            guard signal == "SIGHUP" else {
                await shutdown()
                return signal
            }
            guard configuration.tls != nil else { continue }
            do {
                try reloadCertificates()
                reloaded(nil)
            } catch {
                reloaded(error)
            }
        }
    }
}

/// Waits for SIGINT, SIGTERM or SIGHUP without letting them kill the process.
private final class SignalWaiter {
    private let sources: [any DispatchSourceSignal]
    private let stream: AsyncStream<String>

    init() {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        self.stream = stream
        sources = [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM"), (SIGHUP, "SIGHUP")].map { number, name in
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
