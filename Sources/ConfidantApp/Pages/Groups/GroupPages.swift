import ConfidantKit
import Foundation
import Vapor

/// Groups: the list with a form for a new one, and a group's page (members, conversation, send,
/// add, remove and the timer for admins, leave) — renderings of `Messenger`'s group calls. Every change goes back to
/// a page (post/redirect/get), with what went wrong in words.
struct GroupPages {
    let context: AppContext

    func register(on routes: any RoutesBuilder) {
        routes.get(.groups) { request in try await list(request) }
        routes.post(.createGroup) { request in try await create(request) }
        routes.get(.group(.key)) { request in try await show(request) }
        routes.post(.groupSend(.key)) { request in try await send(request) }
        routes.post(.groupAdd(.key)) { request in try await add(request) }
        routes.post(.groupLeave(.key)) { request in try await leave(request) }
        routes.post(.groupRemove(.key)) { request in try await remove(request) }
        routes.post(.groupTimer(.key)) { request in try await setTimer(request) }
    }

    /// The most members one form names.
    static let maximumInvited = 50

    private func list(_ request: Request) async throws -> Response {
        guard let messenger = await context.session.messenger else { return request.redirect(to: .home) }
        let groups = try await messenger.groups()
        let me = await messenger.me
        let flash = await context.session.takeFlash()
        let page = await MainActor.run {
            GroupListModel(page: context.info("Groups", error: flash?.error), groups: groups, me: me)
        }
        return try await request.page("groups", page)
    }

    private struct CreateForm: Content {
        var name: String
        /// E-mail addresses, separated by commas, spaces or lines.
        var members: String
    }

    private func create(_ request: Request) async throws -> Response {
        guard let messenger = await context.session.messenger else { return request.redirect(to: .home) }
        let form = try request.content.decode(CreateForm.self)
        do {
            let contacts = try await Self.contacts(form.members, messenger)
            guard !contacts.isEmpty else { throw GroupFormError("Name at least one member by e-mail.") }
            let group = try await messenger.createGroup(name: form.name, members: contacts)
            return request.redirect(to: .group(.value(group.groupID)))
        } catch {
            await failed(error)
            return request.redirect(to: .groups)
        }
    }

    private func show(_ request: Request) async throws -> Response {
        guard let messenger = await context.session.messenger else { return request.redirect(to: .home) }
        guard let id = request.uuid(.group), let details = try? await messenger.group(id) else {
            throw Abort(.notFound, reason: "This device knows no such group.")
        }
        let messages = try await messenger.groupHistory(id, limit: 200)
        let draft = try await messenger.draft(in: id)?.text ?? ""
        // `?reply=ID`: the composer answers that message of the group.
        var replying: ChatMessage?
        if let target = request.query[String.self, at: "reply"].flatMap(UUID.init(uuidString:)) {
            replying = try await messenger.message(target, with: id)
        }
        try await messenger.markRead(id)
        let me = await messenger.me
        var names: [UUID: String] = [me: "You"]
        for user in Set(details.state.members + messages.compactMap(\.author) + details.refused.map(\.author))
        where user != me {
            names[user] = (try? await messenger.knownContact(user))?.displayName
        }
        let flash = await context.session.takeFlash()
        let timeline = ChatTimeline(calendar: .current, now: Date())
        let page = await MainActor.run {
            GroupPageModel(
                page: context.info(details.state.name, error: flash?.error), details: details, messages: messages,
                names: names, me: me, timeline: timeline, draft: draft, replying: replying)
        }
        return try await request.page("group", page)
    }

    private struct SendForm: Content {
        var text: String
        /// The message the text answers (the composer's "Replying to" line).
        var replyTo: UUID?
    }

    /// The page's script posts the composer and asks for JSON: it is told to load the page again
    /// (the group's page has no live region yet), which shows the message or why it was not sent.
    private func send(_ request: Request) async throws -> Response {
        let form = try request.content.decode(SendForm.self)
        let text = form.text
        let page = try await change(request) { messenger, id in
            do {
                _ = try await messenger.sendToGroup(id, text: text, replyingTo: form.replyTo)
            } catch {
                // Not sent: the text waits in the composer. The send's reason is the one shown.
                try? await messenger.saveDraft(ChatDraft(text: text), in: id)
                throw error
            }
            try await messenger.saveDraft(ChatDraft(text: ""), in: id)
        }
        guard request.headers.first(name: .accept) == "application/json", let id = request.uuid(.group) else {
            return page
        }
        return try await ChatPages.SendResult(ok: true, reload: AppRoute.group(.value(id)).path).encodeResponse(
            for: request)
    }

    private struct AddForm: Content {
        var members: String
    }

    private func add(_ request: Request) async throws -> Response {
        try await change(request) { messenger, id in
            let contacts = try await Self.contacts(try request.content.decode(AddForm.self).members, messenger)
            guard !contacts.isEmpty else { throw GroupFormError("Name at least one person by e-mail.") }
            _ = try await messenger.addToGroup(id, contacts)
        }
    }

    private func leave(_ request: Request) async throws -> Response {
        try await change(request) { messenger, id in _ = try await messenger.leaveGroup(id) }
    }

    private struct RemoveForm: Content {
        var member: String
    }

    private func remove(_ request: Request) async throws -> Response {
        try await change(request) { messenger, id in
            guard let member = UUID(uuidString: try request.content.decode(RemoveForm.self).member) else {
                throw Abort(.badRequest, reason: "Choose a member the page lists.")
            }
            _ = try await messenger.removeFromGroup(id, [member])
        }
    }

    private struct TimerForm: Content {
        var seconds: Int
    }

    private func setTimer(_ request: Request) async throws -> Response {
        try await change(request) { messenger, id in
            let seconds = try request.content.decode(TimerForm.self).seconds
            guard ChatPageModel.timerChoices.contains(seconds) else {
                throw Abort(.badRequest, reason: "Choose one of the timers the page offers.")
            }
            _ = try await messenger.setGroupTimer(id, seconds: seconds == 0 ? nil : seconds)
        }
    }

    /// Runs one change of the group the path names and goes back to its page, with the reason
    /// when it failed.
    private func change(_ request: Request, _ body: (Messenger, UUID) async throws -> Void) async throws -> Response {
        guard let messenger = await context.session.messenger else { return request.redirect(to: .home) }
        guard let id = request.uuid(.group) else { throw Abort(.notFound, reason: "There is no such group.") }
        do {
            try await body(messenger, id)
        } catch let error as AbortError {
            throw error
        } catch {
            await failed(error)
        }
        return request.redirect(to: .group(.value(id)))
    }

    private func failed(_ error: any Error) async {
        let text = String(describing: error)
        await MainActor.run { context.session.flash = (text.prefix(1).uppercased() + text.dropFirst() + ".", nil) }
    }

    /// The people a form names by e-mail (commas, spaces or lines between them), at most
    /// ``maximumInvited``.
    static func contacts(_ text: String, _ messenger: Messenger) async throws -> [Contact] {
        let emails = text.split(whereSeparator: { $0 == "," || $0.isWhitespace }).map(String.init)
        guard emails.count <= maximumInvited else {
            throw GroupFormError("Name at most \(maximumInvited) people at a time.")
        }
        var contacts: [Contact] = []
        for email in emails { contacts.append(try await messenger.contact(email: email)) }
        return contacts
    }
}

/// A group form that cannot be taken as filled in, in words.
struct GroupFormError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
