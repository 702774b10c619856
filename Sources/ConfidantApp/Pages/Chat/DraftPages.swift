import ConfidantKit
import Foundation
import Vapor

/// What a conversation keeps between visits: the composer's draft, posted by the page's script
/// as it is typed (a chat's or a group's), and "Mark as unread" from a chat's menu.
struct DraftPages {
    let context: AppContext

    func register(on routes: any RoutesBuilder) {
        routes.post(.draft(.key)) { request in try await saveChatDraft(request) }
        routes.post(.groupDraft(.key)) { request in try await saveGroupDraft(request) }
        routes.post(.markUnread(.key)) { request in try await markUnread(request) }
    }

    private struct DraftForm: Content {
        var draft: String
        /// The message the draft answers (the composer's "Replying to" line).
        var replyTo: UUID?
    }

    private func saveChatDraft(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        try await save(request, in: contact.id, messenger)
        return Response(status: .noContent)
    }

    private func saveGroupDraft(_ request: Request) async throws -> Response {
        guard let messenger = await context.session.messenger else {
            throw Abort(.unauthorized, reason: "Sign in first.")
        }
        guard let id = request.uuid(.group), (try? await messenger.group(id)) != nil else {
            throw Abort(.notFound, reason: "This device knows no such group.")
        }
        try await save(request, in: id, messenger)
        return Response(status: .noContent)
    }

    private func save(_ request: Request, in conversation: UUID, _ messenger: Messenger) async throws {
        let form = try request.content.decode(DraftForm.self)
        do {
            try await messenger.saveDraft(ChatDraft(text: form.draft, replyTo: form.replyTo), in: conversation)
        } catch ConfidantKitError.messageTooLarge(let bytes, let limit) {
            throw Abort(.payloadTooLarge, reason: "The draft is \(bytes) bytes; a message holds at most \(limit).")
        }
    }

    /// Marks the chat unread and goes to the list: staying on the chat would read it again.
    private func markUnread(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        try await messenger.markUnread(contact.id)
        return request.redirect(to: .conversations)
    }
}
