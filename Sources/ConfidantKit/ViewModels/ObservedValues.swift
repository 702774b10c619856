import Observation

/// The values an `@Observable` property takes, as an async sequence: what a terminal or a web
/// page needs to follow a view model (SwiftUI does this itself). Starts with the current value;
/// coalesces changes that come faster than they are read.
/// - Parameter read: reads the view model's properties the caller shows.
@MainActor
public func observedValues<Value: Sendable>(_ read: @escaping @MainActor @Sendable () -> Value) -> AsyncStream<Value> {
    let (stream, continuation) = AsyncStream<Value>.makeStream(bufferingPolicy: .bufferingNewest(1))
    ObservationLoop.track(read, continuation)
    return stream
}

@MainActor
private enum ObservationLoop {
    static func track<Value: Sendable>(
        _ read: @escaping @MainActor @Sendable () -> Value, _ continuation: AsyncStream<Value>.Continuation
    ) {
        let value = withObservationTracking {
            read()
        } onChange: {
            // Called before the change is made; read the new value once it is.
            Task { @MainActor in track(read, continuation) }
        }
        continuation.yield(value)
    }
}
