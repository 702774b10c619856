import ConfidantKit
import Foundation
import Vapor

/// What one does to a group's message from its menu: react (Reply is the group's page with
/// `?reply=`, `GroupPages`).
struct GroupMessagePages {
    let context: AppContext

    func register(on routes: any RoutesBuilder) {
        routes.post(.groupReact(.key, message: .key)) { request in try await react(request) }
    }

    private struct ReactForm: Content {
        var emoji: String
    }

    /// Sets this account's reaction to the group's message, or takes it back when it chose the
    /// same one; back to the group's page.
    private func react(_ request: Request) async throws -> Response {
        guard let messenger = await context.session.messenger else {
            throw Abort(.unauthorized, reason: "Sign in first.")
        }
        guard let group = request.uuid(.group), (try? await messenger.group(group)) != nil else {
            throw Abort(.notFound, reason: "This device knows no such group.")
        }
        let form = try request.content.decode(ReactForm.self)
        guard ReactionEmoji.accepts(form.emoji) else { throw Abort(.badRequest, reason: "A reaction is one emoji.") }
        let id = try context.messageID(request)
        try await context.toggleReaction(form.emoji, to: id, in: group, messenger)
        return request.redirect(to: .group(.value(group)), fragment: "m-\(id.canonicalString)")
    }
}
