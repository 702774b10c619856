import ConfidantCrypto
import ConfidantKit
import Foundation
import Vapor

/// Changing messages after they were sent: editing one's own, deleting (for me, or one's own for
/// everyone, after asking which), reacting, and the conversation's disappearing timer.
struct MessageChangePages {
    let context: AppContext

    func register(on routes: any RoutesBuilder) {
        routes.get(.editMessage(.key, message: .key)) { request in try await editPage(request) }
        routes.post(.editMessage(.key, message: .key)) { request in try await edit(request) }
        routes.get(.deleteMessage(.key, message: .key)) { request in try await deletePage(request) }
        routes.post(.deleteMessage(.key, message: .key)) { request in try await delete(request) }
        routes.post(.deleteForMe(.key, message: .key)) { request in try await deleteForMe(request) }
        routes.post(.react(.key, message: .key)) { request in try await react(request) }
        routes.post(.timer(.key)) { request in try await setTimer(request) }
    }

    struct EditPage: Encodable, Sendable {
        let page: PageInfo
        let peer: PersonView
        let id: String
        let text: String
        let save: String

        init(page: PageInfo, peer: Contact, message: ChatMessage) {
            self.page = page
            self.peer = PersonView(peer)
            id = message.id.canonicalString
            text = message.text ?? ""
            save = AppRoute.editMessage(.value(peer.id), message: .value(message.id)).path
        }
    }

    private func editPage(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        let id = try context.messageID(request)
        guard let message = try await messenger.ownMessage(id, with: contact.id), !message.isDeleted else {
            throw Abort(.notFound, reason: "You can edit only messages you sent.")
        }
        let page = await EditPage(page: context.info("Edit a message"), peer: contact, message: message)
        return try await request.page("chat-edit", page)
    }

    private struct EditForm: Content {
        var text: String
    }

    private func edit(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        let form = try request.content.decode(EditForm.self)
        try await messenger.edit(try context.messageID(request), text: form.text)
        // The page's script edits in place and asks for exactly this (see `ChatPages.send`).
        if request.headers.first(name: .accept) == "application/json" {
            return try await EditResult(ok: true).encodeResponse(for: request)
        }
        return request.redirect(to: .chat(.value(contact.id)))
    }

    private struct EditResult: Content {
        var ok: Bool
    }

    struct DeletePage: Encodable, Sendable {
        let page: PageInfo
        let peer: PersonView
        let text: String
        let forEveryone: String?
        let forMe: String
    }

    /// Asks how to delete: for me (any line), or for everyone (one's own, not deleted yet).
    private func deletePage(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        let id = try context.messageID(request)
        guard let message = try await messenger.message(id, with: contact.id) else {
            throw Abort(.notFound, reason: "There is no such message in this conversation.")
        }
        let ownAndLive = message.direction == .outgoing && !message.isDeleted
        let page = await DeletePage(
            page: context.info("Delete a message"), peer: PersonView(contact), text: message.displayText,
            forEveryone: ownAndLive ? AppRoute.deleteMessage(.value(contact.id), message: .value(id)).path : nil,
            forMe: AppRoute.deleteForMe(.value(contact.id), message: .value(id)).path)
        return try await request.page("chat-delete", page)
    }

    private func deleteForMe(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        try await messenger.deleteForMe(try context.messageID(request), with: contact.id)
        return request.redirect(to: .chat(.value(contact.id)))
    }

    private func delete(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        try await messenger.deleteForEveryone(try context.messageID(request))
        return request.redirect(to: .chat(.value(contact.id)))
    }

    private struct ReactForm: Content {
        var emoji: String
    }

    /// Sets this account's reaction to the message, or takes it back when it chose the same one.
    private func react(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        let form = try request.content.decode(ReactForm.self)
        guard ReactionEmoji.accepts(form.emoji) else {
            throw Abort(.badRequest, reason: "A reaction is one emoji.")
        }
        try await context.toggleReaction(form.emoji, to: try context.messageID(request), in: contact.id, messenger)
        return request.redirect(to: .chat(.value(contact.id)))
    }

    private struct TimerForm: Content {
        var seconds: Int
    }

    private func setTimer(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        let form = try request.content.decode(TimerForm.self)
        guard ChatPageModel.timerChoices.contains(form.seconds) else {
            throw Abort(.badRequest, reason: "Choose one of the timers the page offers.")
        }
        try await messenger.setDisappearingTimer(form.seconds == 0 ? nil : form.seconds, with: contact)
        return request.redirect(to: .chat(.value(contact.id)))
    }
}
