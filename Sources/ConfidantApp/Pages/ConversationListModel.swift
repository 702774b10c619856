import ConfidantKit
import Foundation

/// The conversation list as its templates read it (`conversation-pane`, and `conversation-rows`
/// for the live region): on the list page, and beside the open chat on a wide window.
struct ConversationListModel: Encodable, Sendable {
    struct Row: Encodable, Sendable {
        let chat: String
        let avatar: String
        let name: String
        let preview: String
        let timeAgo: String
        let isoTime: String
        /// The unread count as shown; nil (no badge) when there is none.
        let unread: Int?
        let keyChanged: Bool
        /// The chat open beside the list.
        let isCurrent: Bool
    }

    let page: PageInfo
    let rows: [Row]
    let noRows: Bool
    let notices: [String]
    let hasNotices: Bool
    let offline: String?
    let live = AppRoute.liveConversations.path
    let dismissNotices = AppRoute.dismissNotices.path

    /// - Parameter current: the peer whose chat is open beside the list.
    @MainActor
    init(_ model: ConversationsViewModel, page: PageInfo, current: UUID? = nil) {
        self.page = page
        rows = model.rows.map { row in
            let peer = row.summary.peer
            return Row(
                chat: AppRoute.chat(.value(peer.id)).path, avatar: AppRoute.avatar(.value(peer.id)).path,
                name: peer.displayName, preview: row.summary.preview, timeAgo: row.timeAgo,
                isoTime: row.summary.lastActivity.formatted(.iso8601),
                unread: row.summary.unread > 0 ? row.summary.unread : nil,
                keyChanged: row.summary.keyChangeWarning != nil, isCurrent: peer.id == current)
        }
        noRows = rows.isEmpty
        notices = model.accountNotices
        hasNotices = !model.accountNotices.isEmpty
        offline = ConnectionText.offline(model.connection)
    }
}
