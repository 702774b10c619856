import ConfidantKit
import Foundation

/// The conversation list as its templates read it (`conversation-pane`, and `conversation-rows`
/// for the live region): on the list page, every conversation; beside the open chat, the most
/// recent ``besideChat`` (the chat page stays light however many there are), with a link to the
/// rest.
struct ConversationListModel: Encodable, Sendable {
    /// How many conversations the list beside a chat shows.
    static let besideChat = 100

    struct Row: Encodable, Sendable {
        let chat: String
        let avatar: String
        let name: String
        /// The last line, or the kept draft (``hasDraft``) as Signal and WhatsApp show it.
        let preview: String
        let hasDraft: Bool
        let timeAgo: String
        let isoTime: String
        /// The unread count as shown; nil (no badge) when there is none.
        let unread: Int?
        let keyChanged: Bool
        /// The peer's keys are the ones verified.
        let verified: Bool
        /// The chat open beside the list.
        let isCurrent: Bool
    }

    let page: PageInfo
    let rows: [Row]
    let noRows: Bool
    let notices: [String]
    let hasNotices: Bool
    let offline: String?
    /// Conversations not shown ("All 1,000 conversations"); nil when all are.
    let notShown: Int?
    let all = AppRoute.conversations.path
    let live: String
    let dismissNotices = AppRoute.dismissNotices.path

    /// - Parameters:
    ///   - current: the peer whose chat is open beside the list.
    ///   - beside: the list is beside a chat: only the most recent ``besideChat`` rows.
    @MainActor
    init(_ model: ConversationsViewModel, page: PageInfo, current: UUID? = nil, beside: Bool = false) {
        self.page = page
        let shown = beside ? model.rows.prefix(Self.besideChat) : model.rows[...]
        notShown = shown.count < model.rows.count ? model.rows.count - shown.count : nil
        live = beside ? AppRoute.liveConversations.path(query: ["beside": "chat"]) : AppRoute.liveConversations.path
        rows = shown.map { row in
            let peer = row.summary.peer
            let draft = row.summary.draft.map(\.text).flatMap { $0.isEmpty ? nil : $0 }
            return Row(
                chat: AppRoute.chat(.value(peer.id)).path, avatar: AppRoute.avatar(.value(peer.id)).path,
                name: peer.displayName, preview: draft ?? row.summary.preview, hasDraft: draft != nil,
                timeAgo: row.timeAgo, isoTime: row.summary.lastActivity.formatted(.iso8601),
                unread: row.summary.shownUnread > 0 ? row.summary.shownUnread : nil,
                keyChanged: row.summary.keyChangeWarning != nil, verified: row.summary.verified,
                isCurrent: peer.id == current)
        }
        noRows = rows.isEmpty
        notices = model.accountNotices
        hasNotices = !model.accountNotices.isEmpty
        offline = ConnectionText.offline(model.connection)
    }
}
