import ConfidantAPI
import Synchronization

/// The pace a streamed upload must keep (nginx's `client_body_timeout`, as an average rate):
/// after `grace`, at least `minimumBytesPerSecond` on average since it began, so that a trickle
/// or a stall cannot hold an upload slot, a file and a connection for as long as it likes.
///
/// Vapor's HTTP server sets up its connections' handlers itself (no hook for a read deadline
/// before the handler), so the pace is kept where the body is read.
struct UploadPace: Sendable {
    let grace: Duration
    let minimumBytesPerSecond: Int64
    /// How often the pace is checked while the body comes.
    static let checkInterval = Duration.seconds(1)

    init(configuration: ServerConfiguration) {
        grace = .seconds(Int64(configuration.requestBodySeconds))
        minimumBytesPerSecond = configuration.minimumUploadBytesPerSecond
    }

    /// The bytes an upload has read so far, reported by the reader, watched by the pace.
    final class Progress: Sendable {
        private let bytes = Atomic<Int64>(0)
        func add(_ count: Int) { bytes.wrappingAdd(Int64(count), ordering: .relaxed) }
        var read: Int64 { bytes.load(ordering: .relaxed) }
    }

    static let tooSlow = APIFailure(.requestTimeout, "The upload came too slowly; retry it on a faster connection.")

    /// Runs `read` (which reports each chunk to its `Progress`) and cancels it with
    /// `request_timeout` as soon as it falls behind the pace.
    func enforce<Value: Sendable>(
        _ read: @escaping @Sendable (Progress) async throws -> Value
    ) async throws -> Value {
        let progress = Progress()
        let clock = ContinuousClock()
        let start = clock.now
        return try await withThrowingTaskGroup(of: Value?.self) { group in
            group.addTask { try await read(progress) }
            group.addTask {
                while true {
                    try await Task.sleep(for: Self.checkInterval)
                    if isBehind(read: progress.read, after: clock.now - start) { throw Self.tooSlow }
                }
            }
            defer { group.cancelAll() }
            while let outcome = try await group.next() {
                if let value = outcome { return value }
            }
            throw CancellationError()
        }
    }

    /// Whether `read` bytes after `elapsed` fall short of the pace (saturating: no overflow for
    /// any rate or duration).
    func isBehind(read: Int64, after elapsed: Duration) -> Bool {
        guard elapsed > grace else { return false }
        let seconds = (elapsed - grace).components.seconds
        let (owed, overflow) = minimumBytesPerSecond.multipliedReportingOverflow(by: seconds)
        return overflow || read < owed
    }
}
