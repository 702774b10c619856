import ConfidantCrypto
import ConfidantKit
import Foundation

/// The chat page as its templates (`chat`, and `chat-messages` for the live region) read it,
/// built from the chat's state as `ChatViewModel` holds it.
struct ChatPageModel: Encodable, Sendable {
    struct File: Encodable, Sendable {
        let url: String
        let name: String
        let size: String
        let isImage: Bool
    }

    /// The message the composer answers: its id (the form's `replyTo`) and the start of its text.
    struct Replying: Encodable, Sendable {
        let id: String
        let excerpt: String

        init?(_ message: ChatMessage) {
            guard message.direction != .notice, !message.isDeleted else { return nil }
            id = message.id.canonicalString
            excerpt = ReplyQuote(of: message).excerpt
        }
    }

    /// What a reply quotes, under its bubble's text: a link to the message, or "deleted".
    struct Quote: Encodable, Sendable {
        let excerpt: String
        let anchor: String
        let gone: Bool
    }

    /// One emoji under a message: how many chose it and who.
    struct Reaction: Encodable, Sendable {
        let emoji: String
        let count: Int
        /// "You, Alice".
        let who: String
        /// This account's own reaction is among them (choosing it again takes it back).
        let mine: Bool
    }

    struct Message: Encodable, Sendable {
        let id: String
        /// "mine", "theirs" or "notice".
        let side: String
        let text: String
        let hasText: Bool
        let unreadable: Bool
        /// "Today" before the first line of a day; nil for the others.
        let day: String?
        /// Drawn as part of the group of the line before (the same side, minutes apart).
        let follows: Bool
        /// The first line that was unread when the chat opened: a "New messages" divider before it.
        var startsUnread = false
        /// "14:05", and the full date for its tooltip.
        let time: String
        let fullTime: String
        let isoTime: String
        let status: String?
        let failed: Bool
        let edited: Bool
        let deleted: Bool
        let disappearing: Bool
        let files: [File]
        let hasFiles: Bool
        /// Whether it offers editing and deletion for everyone (one's own, neither deleted nor failed).
        let canChange: Bool
        /// Editing needs text to edit.
        let canEdit: Bool
        /// It has text to copy.
        let canCopy: Bool
        let retry: String
        let edit: String
        /// The page that asks: for me, or for everyone.
        let delete: String
        let quote: Quote?
        /// This chat with the composer answering this message.
        let reply: String
        let reactions: [Reaction]
        let hasReactions: Bool
        /// A live message (not a notice, not deleted) takes reactions, posted to `react`.
        let canReact: Bool
        let react: String
        /// The emoji the menu offers, this account's own marked.
        let reactChoices: [Reaction]
    }

    struct TimerChoice: Encodable, Sendable {
        let seconds: Int
        let label: String
        let selected: Bool
    }

    struct Links: Encodable, Sendable {
        /// This chat, as a new message answers nothing.
        let chat: String
        let live: String
        let send: String
        /// Where the composer's script keeps the draft as it is typed.
        let draft: String
        let markUnread: String
        /// The search page limited to this chat.
        let search: String
        let attach: String
        let timer: String
        /// The chat with the next ``ChatWindow/step`` lines before these; nil when there are none.
        let earlier: String?
    }

    let page: PageInfo
    let peer: PersonView
    let messages: [Message]
    let keyChangeBanner: String?
    let offline: String?
    let confirmKeyChange: Bool
    let draft: String
    let timers: [TimerChoice]
    let timer: String?
    /// The peer's keys are the ones verified: a badge in the header.
    let verified: Bool
    /// The message the composer answers; nil for a new message.
    var replying: Replying?
    /// The conversation list beside the chat (nil in the live region, which does not show it).
    var list: ConversationListModel?
    let maxUpload: String
    let links: Links

    /// The disappearing timers the page offers, in seconds (0 is off).
    static let timerChoices = [0, 30, 300, 3600, 86_400, 604_800]

    /// - Parameters:
    ///   - confirmKeyChange: the last send was held for a key change: the composer asks to send anyway.
    ///   - draft: the text the composer starts with.
    ///   - unreadFrom: the line that was the first unread when the chat opened (the live region,
    ///     whose lines are read by then, keeps the divider there); nil: the first unread line now.
    init(
        page: PageInfo, peer: Contact, messages: [ChatMessage], keyChangeBanner: String?, connection: ConnectionState,
        disappearingTimer: Int?, verified: Bool = false, confirmKeyChange: Bool = false, draft: String = "",
        maxUploadBytes: Int, window: ChatWindow = ChatWindow(), unreadFrom: UUID? = nil, now: Date = Date(),
        calendar: Calendar = .current
    ) {
        self.page = page
        self.peer = PersonView(peer)
        let timeline = ChatTimeline(calendar: calendar, now: now)
        var lines: [Message] = []
        lines.reserveCapacity(messages.count)
        for index in messages.indices {
            let previous = index > messages.startIndex ? messages[index - 1] : nil
            lines.append(
                Self.message(
                    messages[index], after: previous, peer: peer.id, peerName: peer.displayName, timeline: timeline))
        }
        let firstUnread = unreadFrom ?? messages.first { $0.direction == .incoming && !$0.isRead }?.id
        if let index = messages.firstIndex(where: { $0.id == firstUnread }) { lines[index].startsUnread = true }
        self.messages = lines
        self.verified = verified
        self.keyChangeBanner = keyChangeBanner
        offline = ConnectionText.offline(connection)
        self.confirmKeyChange = confirmKeyChange
        self.draft = draft
        let timer = disappearingTimer ?? 0
        timers = Self.timerChoices.map {
            TimerChoice(seconds: $0, label: $0 == 0 ? "Off" : DisappearingTimer.describe($0), selected: $0 == timer)
        }
        self.timer = timer == 0 ? nil : DisappearingTimer.describe(timer)
        maxUpload = ByteCountFormatter.string(fromByteCount: Int64(maxUploadBytes), countStyle: .file)
        // A full window may have lines before it; a shorter one is the whole conversation.
        let larger = window.larger
        links = Links(
            chat: AppRoute.chat(.value(peer.id)).path,
            live: AppRoute.liveChat(.value(peer.id)).path(
                query: Self.liveQuery(window, unreadFrom: lines.contains { $0.startsUnread } ? firstUnread : nil)),
            send: AppRoute.send(.value(peer.id)).path, draft: AppRoute.draft(.value(peer.id)).path,
            markUnread: AppRoute.markUnread(.value(peer.id)).path,
            search: AppRoute.search.path(query: ["in": peer.id.canonicalString]),
            attach: AppRoute.attach(.value(peer.id)).path,
            timer: AppRoute.timer(.value(peer.id)).path,
            earlier: messages.count >= window.lines && larger.lines > window.lines
                ? AppRoute.chat(.value(peer.id)).path(query: larger.query) : nil)
    }

    /// The live region's query: the window, and the line the divider stays before.
    private static func liveQuery(_ window: ChatWindow, unreadFrom: UUID?) -> KeyValuePairs<String, String> {
        let lines = window.query.first?.value
        switch (lines, unreadFrom) {
        case (let lines?, let id?): return ["lines": lines, "unread": id.canonicalString]
        case (let lines?, nil): return ["lines": lines]
        case (nil, let id?): return ["unread": id.canonicalString]
        case (nil, nil): return [:]
        }
    }

    /// The page for what `model` shows now.
    @MainActor
    init(
        _ model: ChatViewModel, page: PageInfo, confirmKeyChange: Bool = false, draft: String = "", maxUploadBytes: Int,
        window: ChatWindow = ChatWindow(), unreadFrom: UUID? = nil
    ) {
        self.init(
            page: page, peer: model.peer, messages: model.messages, keyChangeBanner: model.keyChangeBanner,
            connection: model.connection, disappearingTimer: model.disappearingTimer,
            verified: model.verificationState == .verified, confirmKeyChange: confirmKeyChange, draft: draft,
            maxUploadBytes: maxUploadBytes, window: window, unreadFrom: unreadFrom)
    }

    static func message(
        _ message: ChatMessage, after previous: ChatMessage?, peer: UUID, peerName: String, timeline: ChatTimeline
    ) -> Message {
        let failed = if case .failed = message.status { true } else { false }
        let id = message.id
        let newDay = timeline.startsDay(message.sentAt, after: previous?.sentAt)
        let follows =
            previous.map {
                $0.direction == message.direction && message.direction != .notice
                    && timeline.continuesGroup(message.sentAt, after: $0.sentAt)
            } ?? false
        let canChange = message.direction == .outgoing && !message.isDeleted && !failed
        // One-to-one, a reaction is the peer's or this account's.
        let mine = message.reactions.first { $0.reactor != peer }?.emoji
        let reactions = ChatReaction.counts(message.reactions).map { emoji, count in
            let by = message.reactions.filter { $0.emoji == emoji }
            return Reaction(
                emoji: emoji, count: count,
                who: by.map { $0.reactor == peer ? peerName : "You" }.joined(separator: ", "),
                mine: by.contains { $0.reactor != peer })
        }
        return Message(
            id: id.canonicalString,
            side: message.direction == .outgoing ? "mine" : message.direction == .notice ? "notice" : "theirs",
            text: message.text == nil && !message.attachments.isEmpty && !message.isDeleted ? "" : message.displayText,
            hasText: message.text != nil || message.attachments.isEmpty || message.isDeleted,
            unreadable: message.isUnreadable || message.isDeleted,
            day: newDay ? timeline.dayLabel(message.sentAt) : nil, follows: follows,
            time: timeline.shortTime(message.sentAt), fullTime: timeline.fullTime(message.sentAt),
            isoTime: message.sentAt.formatted(.iso8601),
            status: DeliveryStatusText.describe(message, now: timeline.now),
            failed: failed, edited: message.editedAt != nil && !message.isDeleted, deleted: message.isDeleted,
            disappearing: message.expiresAt != nil,
            files: message.attachments.map { file in
                File(
                    url: AppRoute.file(.value(peer), message: .value(id), index: .value(file.index)).path,
                    name: file.name,
                    size: ByteCountFormatter.string(fromByteCount: Int64(file.size), countStyle: .file),
                    isImage: file.isImage)
            }, hasFiles: !message.attachments.isEmpty,
            canChange: canChange, canEdit: canChange && message.text != nil,
            canCopy: message.text != nil && !message.isDeleted,
            retry: AppRoute.retry(.value(peer), message: .value(id)).path,
            edit: AppRoute.editMessage(.value(peer), message: .value(id)).path,
            delete: AppRoute.deleteMessage(.value(peer), message: .value(id)).path,
            quote: message.reply.map {
                Quote(excerpt: $0.excerpt, anchor: "#m-\($0.messageID.canonicalString)", gone: message.replyTargetGone)
            },
            reply: AppRoute.chat(.value(peer)).path(query: ["reply": id.canonicalString]),
            reactions: reactions, hasReactions: !reactions.isEmpty,
            canReact: message.direction != .notice && !message.isDeleted,
            react: AppRoute.react(.value(peer), message: .value(id)).path,
            reactChoices: ReactionEmoji.offered.map { emoji in
                Reaction(emoji: emoji, count: 0, who: "", mine: mine == emoji)
            })
    }
}
