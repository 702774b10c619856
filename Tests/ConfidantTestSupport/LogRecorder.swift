import Logging
import Synchronization

/// A logger that keeps what is logged (level and message), for tests of what the relay logs
/// and at which level.
package final class LogRecorder: Sendable {
    package struct Entry: Sendable {
        package let level: Logger.Level
        package let message: String
    }

    private let entries = Mutex<[Entry]>([])

    package init() {}

    /// Everything logged so far.
    package var logged: [Entry] { entries.withLock { $0 } }

    /// A logger writing here (at `.trace`, so that every level is kept).
    package func logger(label: String = "confidant.relay") -> Logger {
        var logger = Logger(label: label) { _ in Handler(recorder: self) }
        logger.logLevel = .trace
        return logger
    }

    fileprivate func record(_ entry: Entry) { entries.withLock { $0.append(entry) } }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            recorder.record(Entry(level: event.level, message: "\(event.message)"))
        }
    }
}
