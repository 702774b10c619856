import Foundation

/// When a message that could not be delivered is tried again: exponential back-off with jitter,
/// as mail clients and Signal do, so that many clients coming back after an outage do not all
/// retry at the same instant.
public struct RetryPolicy: Sendable {
    /// The delay after the first failure.
    public var initial: Duration = .seconds(2)
    /// The longest delay between attempts.
    public var maximum: Duration = .seconds(300)
    /// A delay is scaled by a factor drawn from this range.
    public var jitter: ClosedRange<Double> = 0.8...1.2
    /// Draws the jitter factor; tests fix it.
    public var random: @Sendable (ClosedRange<Double>) -> Double = { Double.random(in: $0) }
    /// Waits before an automatic attempt; tests wait for their own clock instead.
    public var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }

    /// The defaults: 2 s, doubling, at most 5 min, ±20 %.
    public init() {}

    /// The delay before attempt `attempt + 1`, after `attempt` failures (1, 2, …).
    public func delay(afterFailures attempt: Int) -> Duration {
        let exponent = min(max(attempt - 1, 0), 20)
        let base = min(initial * Double(1 << exponent), maximum)
        return base * random(jitter)
    }

    /// When the next attempt is due, after `attempt` failures.
    public func nextAttempt(after attempt: Int, now: Date) -> Date {
        let delay = delay(afterFailures: attempt)
        return now.addingTimeInterval(Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
    }
}
