import ConfidantCrypto
import ConfidantKit
import Foundation
import Vapor

/// A chat (live), sending with Enter, retry, and the key-change confirmation: `ChatViewModel`
/// rendered through `ChatPageModel`. Files, edits and verification have pages of their own
/// (`ChatFilePages`, `MessageChangePages`, `VerifyPages`).
struct ChatPages {
    let context: AppContext

    func register(on routes: any RoutesBuilder) {
        routes.post(.chatWith) { request in try await open(request) }
        routes.get(.chat(.key)) { request in try await chat(request) }
        routes.get(.liveChat(.key)) { request in try await live(request) }
        routes.post(.send(.key)) { request in try await send(request) }
        routes.post(.retry(.key, message: .key)) { request in try await retry(request) }
    }

    private struct OpenForm: Content {
        var email: String
    }

    /// `POST /chat/with` (`email`): finds the user in the directory, adds them as a contact, and
    /// goes to their chat.
    private func open(_ request: Request) async throws -> Response {
        guard let messenger = await context.session.messenger else { return request.redirect(to: .home) }
        let email = (try? request.content.decode(OpenForm.self).email) ?? ""
        guard !email.isEmpty, email.count <= 320 else {
            throw Abort(.badRequest, reason: "Choose someone to write to.")
        }
        do {
            let contact = try await messenger.contact(email: email)
            return request.redirect(to: .chat(.value(contact.id)))
        } catch ConfidantKitError.unknownUser {
            throw Abort(.notFound, reason: "Nobody with the e-mail \(email) is on this server.")
        }
    }

    private func chat(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        let window = try ChatWindow(request)
        let model = await ChatViewModel(messenger: messenger, peer: contact, limit: window.lines)
        await model.load()
        let held = await context.session.heldDrafts[contact.id]
        // `?reply=ID`: the composer answers that message of this conversation.
        var replying: ChatMessage?
        if let id = request.query[String.self, at: "reply"].flatMap(UUID.init(uuidString:)) {
            replying = try await messenger.message(id, with: contact.id)
        } else if let kept = await model.replyingTo {
            // The kept draft answers a message.
            replying = try await messenger.message(kept, with: contact.id)
        }
        let maximum = context.session.configuration.maxUploadBytes
        let page = await MainActor.run { () -> ChatPageModel in
            var page = ChatPageModel(
                model, page: context.info(contact.displayName, error: model.error), confirmKeyChange: held != nil,
                draft: held ?? model.draft, maxUploadBytes: maximum, window: window)
            page.replying = replying.flatMap(ChatPageModel.Replying.init)
            page.list = context.session.conversations.map {
                ConversationListModel($0, page: page.page, current: contact.id, beside: true)
            }
            return page
        }
        return try await request.page("chat", page)
    }

    /// The messages as they change, while the chat is open (it marks arrivals read, as a user
    /// looking at the chat has read them).
    private func live(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        let maximum = context.session.configuration.maxUploadBytes
        let window = try ChatWindow(request)
        // The line the page showed its "New messages" divider before (the page marked it read).
        let unreadFrom = request.query[String.self, at: "unread"].flatMap(UUID.init(uuidString:))
        return LiveRegion.response(for: request, template: "chat-messages", heartbeat: LiveRegion.chatHeartbeat) {
            () async -> AsyncStream<ChatPageModel>? in
            let model = await ChatViewModel(messenger: messenger, peer: contact, limit: window.lines)
            await model.load()
            let running = Task { await model.run() }
            let values = await observedValues {
                ChatPageModel(
                    model, page: context.info(contact.displayName), maxUploadBytes: maximum, window: window,
                    unreadFrom: unreadFrom)
            }
            return AsyncStream { continuation in
                let forwarding = Task {
                    for await value in values { continuation.yield(value) }
                    continuation.finish()
                }
                continuation.onTermination = { _ in
                    forwarding.cancel()
                    running.cancel()
                }
            }
        }
    }

    private struct SendForm: Content {
        var draft: String
        var confirmKeyChange: Bool?
        /// The message the draft answers (from the composer's "Replying to" line).
        var replyTo: UUID?
    }

    /// What the composer's script reads back: whether it went, and a page to load instead.
    struct SendResult: Content {
        var ok: Bool
        var reload: String?
    }

    private func send(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        let form = try request.content.decode(SendForm.self)
        let here = AppRoute.chat(.value(contact.id))
        // The page's script asks for exactly this; a browser's form navigation accepts */*, which
        // Vapor's media-type comparison would match against JSON too.
        let wantsJSON = request.headers.first(name: .accept) == "application/json"
        let model = await ChatViewModel(messenger: messenger, peer: contact)
        await MainActor.run {
            model.draft = form.draft
            model.replyingTo = form.replyTo
        }
        await model.send(confirmKeyChange: form.confirmKeyChange == true)
        let needsConfirmation = await MainActor.run { () -> Bool in
            if model.needsKeyChangeConfirmation {
                context.session.heldDrafts[contact.id] = form.draft
                return true
            }
            context.session.heldDrafts[contact.id] = nil
            return false
        }
        if let error = await model.error, !needsConfirmation {
            throw Abort(.unprocessableEntity, reason: "Not sent: \(error)")
        }
        if wantsJSON {
            return try await SendResult(ok: !needsConfirmation, reload: needsConfirmation ? here.path : nil)
                .encodeResponse(for: request)
        }
        return request.redirect(to: here)
    }

    private func retry(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        let id = try context.messageID(request)
        let model = await ChatViewModel(messenger: messenger, peer: contact)
        await model.retry(id)
        return request.redirect(to: .chat(.value(contact.id)))
    }
}

extension AppContext {
    /// The signed-in messenger and the contact the path names; a peer this profile never saw is 404.
    func chatPeer(_ request: Request) async throws -> (Messenger, Contact) {
        guard let messenger = await session.messenger else {
            throw Abort(.unauthorized, reason: "Sign in first.")
        }
        guard let id = request.uuid(.peer), let contact = try await messenger.knownContact(id) else {
            throw Abort(.notFound, reason: "There is no such conversation on this device.")
        }
        return (messenger, contact)
    }

    /// Sets this account's reaction to `message` of `conversation` (a chat or a group) to
    /// `emoji`, or takes it back when it is the one already set (the menu's toggle).
    /// - Throws: 404 when the conversation has no such message.
    func toggleReaction(_ emoji: String, to id: UUID, in conversation: UUID, _ messenger: Messenger) async throws {
        guard let message = try await messenger.message(id, with: conversation) else {
            throw Abort(.notFound, reason: "There is no such message in this conversation.")
        }
        let me = await messenger.me
        let current = message.reactions.first { $0.reactor == me }?.emoji
        try await messenger.react(to: id, with: current == emoji ? nil : emoji, in: conversation)
    }

    /// The message the path names.
    func messageID(_ request: Request) throws -> UUID {
        guard let id = request.uuid(.message) else { throw Abort(.notFound, reason: "There is no such message.") }
        return id
    }
}
