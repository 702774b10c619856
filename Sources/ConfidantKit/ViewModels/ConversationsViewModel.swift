import Foundation
import Observation

/// The main screen: recent conversations newest first, with "time ago" and unread counts.
@MainActor @Observable
public final class ConversationsViewModel {
    public struct Row: Identifiable, Sendable, Hashable {
        public var id: UUID { summary.id }
        public let summary: ConversationSummary
        public let timeAgo: String
    }

    public private(set) var rows: [Row] = []
    /// Set when the server could not be reached; the rows are then what the device has.
    public private(set) var error: String?
    public private(set) var isSignedOut = false
    private let messenger: Messenger

    public init(messenger: Messenger) {
        self.messenger = messenger
    }

    /// Fetches what is new on the server, then shows the local conversations.
    public func refresh(now: Date = Date()) async {
        do {
            _ = try await messenger.sync()
            error = nil
        } catch {
            self.error = String(describing: error)
        }
        await reload(now: now)
    }

    /// Shows the local conversations without asking the server.
    public func reload(now: Date = Date()) async {
        do {
            let summaries = try await messenger.conversations()
            rows = summaries.map { Row(summary: $0, timeAgo: RelativeTime.describe($0.lastActivity, now: now)) }
        } catch {
            self.error = String(describing: error)
        }
    }

    public func signOut() async {
        do {
            try await messenger.logout()
            isSignedOut = true
        } catch {
            self.error = String(describing: error)
        }
    }
}
