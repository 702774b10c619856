import ConfidantCrypto
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// Fan-out across server instances without a broker: every instance LISTENs on one PostgreSQL
/// channel; a write NOTIFYs the device addresses it touched (`MailboxWakeNotice`), delivered as it
/// commits; each other instance wakes its own streams (the writer wakes its own itself).
/// After a lost connection it reconnects with backoff and wakes every local stream, since
/// notifications sent meanwhile are gone. Revoked sessions (`Revocation`) come on the same
/// channel, so that every instance forgets them and closes their streams.
final class PostgresMailboxListener: Sendable {
    static let channel = "confidant_mailbox"

    private let configuration: PostgresConnection.Configuration
    private let hub: MailboxHub
    private let sessions: SessionCache
    private let logger: Logger
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(configuration: PostgresConnection.Configuration, hub: MailboxHub, sessions: SessionCache, logger: Logger) {
        self.configuration = configuration
        self.hub = hub
        self.sessions = sessions
        self.logger = logger
    }

    func start() {
        let configuration = configuration
        let hub = hub
        let sessions = sessions
        let logger = logger
        let listening = Task {
            var attempt = 0
            while !Task.isCancelled {
                do {
                    let connection = try await PostgresConnection.connect(
                        on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: 1,
                        logger: logger
                    ).get()
                    defer { Task { try? await connection.close() } }
                    let reconnected = attempt > 0
                    attempt = 0
                    try await connection.listen(on: Self.channel) { notifications in
                        if reconnected { hub.wakeEveryone() }
                        for try await notification in notifications {
                            if let revocation = Revocation(notification: notification.payload) {
                                SessionRevoker.apply(revocation, cache: sessions, hub: hub)
                                continue
                            }
                            let notice = MailboxWakeNotice(payload: notification.payload)
                            // This instance wakes its own streams after its writes commit.
                            guard notice.from != hub.instance else { continue }
                            hub.wake(notice.addresses)
                        }
                    }
                } catch {
                    if Task.isCancelled { break }
                    logger.warning(
                        "PostgreSQL LISTEN connection lost; reconnecting",
                        metadata: ["error": "\(String(reflecting: type(of: error)))"])
                }
                attempt += 1
                try? await Task.sleep(for: .milliseconds(min(5_000, 100 * (1 << min(attempt, 6)))))
            }
        }
        task.withLock { $0 = listening }
    }

    func stop() {
        task.withLock {
            $0?.cancel()
            $0 = nil
        }
    }
}
