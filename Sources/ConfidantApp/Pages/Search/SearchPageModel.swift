import ConfidantKit
import Foundation

/// The search page as `search.leaf` reads it: the query, the conversation it is limited to, and
/// each result with its conversation, its context and a link to the message in its chat.
struct SearchPageModel: Encodable, Sendable {
    struct Result: Encodable, Sendable {
        /// "Alice Example", "You → Alice Example", or "Bob in Family" for a group.
        let who: String
        let excerpt: String
        let time: String
        let fullTime: String
        let isoTime: String
        /// The chat (or group) opened far enough back to show the message, at its line.
        let link: String
    }

    /// What a result needs that its message does not say: its conversation's name, whether that
    /// is a group, an author's name in a group, and how far back its chat must show.
    struct Context: Sendable {
        var conversationNames: [UUID: String] = [:]
        var groups: Set<UUID> = []
        var authorNames: [UUID: String] = [:]
        var linesSince: [UUID: Int] = [:]
    }

    let page: PageInfo
    let query: String
    /// The conversation the search is limited to (its id for the form, its name for the heading).
    let within: String?
    let withinName: String?
    /// The same query over every chat, when limited to one.
    let everywhere: String?
    let results: [Result]
    let noResults: Bool
    /// Messages from before the index still being indexed: results may miss some of them.
    let indexing: Int?
    let action = AppRoute.search.path

    init(
        page: PageInfo, query: String, within: UUID?, hits: [SearchHit], context: Context, backlog: Int,
        timeline: ChatTimeline
    ) {
        self.page = page
        self.query = query
        self.within = within?.canonicalString
        withinName = within.flatMap { context.conversationNames[$0] }
        everywhere = within == nil ? nil : AppRoute.search.path(query: ["q": query])
        results = hits.map { hit in
            let message = hit.message
            let conversation = context.conversationNames[message.peer] ?? "A conversation"
            let inGroup = context.groups.contains(message.peer)
            let who =
                switch (message.direction == .outgoing, inGroup) {
                case (true, false): "You → \(conversation)"
                case (true, true): "You in \(conversation)"
                case (false, false): conversation
                case (false, true):
                    "\(message.author.flatMap { context.authorNames[$0] } ?? "Someone") in \(conversation)"
                }
            return Result(
                who: who, excerpt: hit.excerpt,
                time: "\(timeline.dayLabel(message.sentAt)) \(timeline.shortTime(message.sentAt))",
                fullTime: timeline.fullTime(message.sentAt), isoTime: message.sentAt.formatted(.iso8601),
                link: Self.link(to: message, inGroup: inGroup, linesSince: context.linesSince[message.id] ?? 1))
        }
        noResults = !query.isEmpty && hits.isEmpty
        indexing = backlog > 0 ? backlog : nil
    }

    /// The message's line in its chat: the window of lines that reaches it (the largest when it
    /// is further back, which opens the chat at its earliest line shown); a group's page.
    static func link(to message: ChatMessage, inGroup: Bool, linesSince: Int) -> String {
        let anchor = "m-\(message.id.canonicalString)"
        if inGroup { return AppRoute.group(.value(message.peer)).path(fragment: anchor) }
        let steps = (linesSince + ChatWindow.step - 1) / ChatWindow.step
        let window = ChatWindow(lines: min(max(steps, 1) * ChatWindow.step, ChatWindow.maximum)) ?? ChatWindow()
        return AppRoute.chat(.value(message.peer)).path(query: window.query, fragment: anchor)
    }
}
