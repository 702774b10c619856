import Foundation
import Observation

/// The main screen: recent conversations newest first, with "time ago", unread counts and
/// key-change markers, kept live by `run()`: rows follow the local store as messages arrive,
/// relative times move on, and the connection shows as an offline banner.
@MainActor @Observable
public final class ConversationsViewModel {
    /// One conversation as the list shows it.
    public struct Row: Identifiable, Sendable, Hashable {
        public var id: UUID { summary.id }
        /// The conversation.
        public let summary: ConversationSummary
        /// "5 min ago", against the view model's clock.
        public let timeAgo: String
    }

    /// The conversations, most recent first.
    public private(set) var rows: [Row] = []
    /// Set when something failed (the server could not be reached on `refresh`, the store could
    /// not be read); the rows are then what the device has.
    public private(set) var error: String?
    /// Set once `signOut` worked.
    public private(set) var isSignedOut = false
    /// The last `refresh` could not reach the server: the rows are what this device has.
    public private(set) var isOffline = false
    /// Where the live connection stands; anything but `.live` while running means "offline".
    public private(set) var connection: ConnectionState = .stopped
    /// What happened to the account that the user has not seen yet, newest first: "A new device
    /// signed in to your account…" — a screen shows them until `dismissAccountNotices`.
    public private(set) var accountNotices: [String] = []
    private var summaries: [ConversationSummary] = []
    private let messenger: Messenger
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - messenger: the signed-in profile.
    ///   - now: the clock relative times are computed against; tests pin it.
    public init(messenger: Messenger, now: @escaping @Sendable () -> Date = { Date() }) {
        self.messenger = messenger
        self.now = now
    }

    /// Keeps the rows live until the task is cancelled: follows the store and the connection,
    /// and recomputes relative times every `interval`.
    public func run(updatingTimesEvery interval: Duration = .seconds(30)) async {
        async let store: Void = followStore()
        async let notices: Void = followAccountNotices()
        async let connection: Void = followConnection()
        async let times: Void = updateTimesPeriodically(interval)
        _ = await (store, notices, connection, times)
    }

    private func followAccountNotices() async {
        do {
            for try await notices in await messenger.accountNoticeUpdates() {
                accountNotices = notices.compactMap(\.text)
            }
        } catch {
            self.error = String(describing: error)
        }
    }

    /// The user saw the account notices: they go.
    public func dismissAccountNotices() async {
        do {
            try await messenger.markAccountNoticesSeen()
            accountNotices = []
        } catch {
            self.error = String(describing: error)
        }
    }

    private func followStore() async {
        do {
            for try await summaries in messenger.conversationUpdates() { show(summaries) }
        } catch {
            self.error = String(describing: error)
        }
    }

    private func followConnection() async {
        // The state and its changes from one call on the messenger, so none falls between them
        // (read apart, a '.live' in between left the model 'offline' for good).
        for await state in await messenger.connectionUpdates() { connection = state }
    }

    private func updateTimesPeriodically(_ interval: Duration) async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: interval) } catch { return }
            updateTimes()
        }
    }

    private func show(_ summaries: [ConversationSummary]) {
        self.summaries = summaries
        updateTimes()
    }

    /// Recomputes "5 min ago" against the clock.
    public func updateTimes() {
        let now = now()
        rows = summaries.map { Row(summary: $0, timeAgo: RelativeTime.describe($0.lastActivity, now: now)) }
    }

    /// Fetches what is new on the server (the rows follow), and reads the local conversations.
    public func refresh() async {
        do {
            _ = try await messenger.sync()
            error = nil
            isOffline = false
        } catch {
            self.error = String(describing: error)
            if case ConfidantKitError.serverUnreachable = error { isOffline = true }
        }
        do {
            show(try await messenger.conversations())
            accountNotices = try await messenger.accountNotices().compactMap(\.text)
        } catch {
            self.error = String(describing: error)
        }
    }

    /// Signs the profile out on the server and here.
    public func signOut() async {
        do {
            try await messenger.logout()
            isSignedOut = true
        } catch {
            self.error = String(describing: error)
        }
    }
}
