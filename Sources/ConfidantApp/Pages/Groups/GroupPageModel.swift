import ConfidantKit
import Foundation

/// What the groups page shows: each group this device knows, with its member count and role.
struct GroupListModel: Encodable, Sendable {
    struct Row: Encodable, Sendable {
        let name: String
        let members: Int
        let role: String
        let link: String
    }

    let page: PageInfo
    let groups: [Row]
    let create = AppRoute.createGroup.path

    init(page: PageInfo, groups: [GroupState], me: UUID) {
        self.page = page
        self.groups = groups.map { group in
            Row(
                name: group.name, members: group.members.count,
                role: group.admins.contains(me) ? "admin" : group.members.contains(me) ? "member" : "not a member",
                link: AppRoute.group(.value(group.groupID)).path)
        }
    }
}

/// One group's page: its members with roles, its conversation with each message's author, and
/// the forms its state allows (send and leave for members; add, remove and the timer for admins).
struct GroupPageModel: Encodable, Sendable {
    struct Member: Encodable, Sendable {
        let id: String
        let name: String
        let isAdmin: Bool
        /// An admin sees a Remove button beside every other member.
        let removable: Bool
    }

    struct Line: Encodable, Sendable {
        /// The message's id, the line's anchor (`#m-…`, where a search result points).
        let id: String
        let author: String
        let mine: Bool
        let text: String
        let unreadable: Bool
        let time: String
        let fullTime: String
        let status: String
        /// "👍 2 🎉 1"; empty when nobody reacted.
        let reactions: String
        /// What the line answers: the start of that message, and whether it is gone.
        let quote: String?
        let quoteGone: Bool
        let quoteAnchor: String
        /// A live message offers Reply (this page with the composer answering it) and reactions.
        let canReact: Bool
        let reply: String
        let react: String
        let reactChoices: [ChatPageModel.Reaction]
    }

    /// The message the composer answers (`?reply=`), with its id for the form.
    let replying: ChatPageModel.Replying?

    let page: PageInfo
    let name: String
    let members: [Member]
    let lines: [Line]
    let isMember: Bool
    let isAdmin: Bool
    let refused: [String]
    let send: String
    /// This page without `?reply=`.
    let cancelReply: String
    /// What the composer starts with (the group's kept draft), and where its script keeps it.
    let draft: String
    let draftLink: String
    let add: String
    let leave: String
    let remove: String
    let timer: String
    let timers: [ChatPageModel.TimerChoice]
    /// The group's timer in words, nil when off.
    let timerText: String?

    init(
        page: PageInfo, details: GroupDetails, messages: [ChatMessage], names: [UUID: String], me: UUID,
        timeline: ChatTimeline, draft: String = "", replying: ChatMessage? = nil
    ) {
        self.replying = replying.flatMap(ChatPageModel.Replying.init)
        let group = details.state.groupID
        let state = details.state
        self.page = page
        name = state.name
        let isAdmin = state.admins.contains(me)
        members = state.members.map {
            Member(
                id: $0.canonicalString, name: names[$0] ?? "Someone", isAdmin: state.admins.contains($0),
                removable: isAdmin && $0 != me)
        }
        lines = messages.map { message in
            Line(
                id: message.id.canonicalString,
                author: message.direction == .outgoing ? "You" : message.author.flatMap { names[$0] } ?? "Someone",
                mine: message.direction == .outgoing, text: message.displayText, unreadable: message.isUnreadable,
                time: timeline.shortTime(message.sentAt), fullTime: timeline.fullTime(message.sentAt),
                status: message.status == .pending ? "sending…" : message.groupReceipts?.summary ?? "",
                reactions: ChatReaction.summary(message.reactions), quote: message.reply?.excerpt,
                quoteGone: message.replyTargetGone,
                quoteAnchor: message.reply.map { "#m-\($0.messageID.canonicalString)" } ?? "",
                canReact: !message.isUnreadable && !message.isDeleted && message.direction != .notice,
                reply: AppRoute.group(.value(group)).path(query: ["reply": message.id.canonicalString]),
                react: AppRoute.groupReact(.value(group), message: .value(message.id)).path,
                reactChoices: ReactionEmoji.offered.map { emoji in
                    ChatPageModel.Reaction(
                        emoji: emoji, count: 0, who: "",
                        mine: message.reactions.contains { $0.reactor == me && $0.emoji == emoji })
                })
        }
        isMember = state.members.contains(me)
        self.isAdmin = isAdmin
        refused = details.refused.map { "\(names[$0.author] ?? "Someone"): \($0.reason)" }
        let id = state.groupID
        send = AppRoute.groupSend(.value(id)).path
        cancelReply = AppRoute.group(.value(id)).path
        self.draft = draft
        draftLink = AppRoute.groupDraft(.value(id)).path
        add = AppRoute.groupAdd(.value(id)).path
        leave = AppRoute.groupLeave(.value(id)).path
        remove = AppRoute.groupRemove(.value(id)).path
        timer = AppRoute.groupTimer(.value(id)).path
        timers = ChatPageModel.timerChoices.map {
            ChatPageModel.TimerChoice(
                seconds: $0, label: $0 == 0 ? "Off" : DisappearingTimer.describe($0),
                selected: $0 == state.timerSeconds)
        }
        timerText = state.timerSeconds > 0 ? DisappearingTimer.describe(state.timerSeconds) : nil
    }
}
