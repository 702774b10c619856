import ConfidantKit
import Foundation
import Vapor

/// The conversation list (live; on a wide window beside an empty chat pane) and "new message":
/// renderings of `ConversationsViewModel` (through `ConversationListModel`) and `NewMessageViewModel`.
struct ConversationPages {
    let context: AppContext

    func register(on routes: any RoutesBuilder) {
        routes.get(.conversations) { request in try await list(request) }
        routes.get(.liveConversations) { request in try live(request) }
        routes.post(.dismissNotices) { request in
            await context.session.conversations?.dismissAccountNotices()
            return request.redirect(to: .conversations)
        }
        routes.get(.newMessage) { request in try await newMessage(request) }
        routes.get(.liveNotifications) { request in
            guard let messenger = await context.session.messenger else {
                throw Abort(.unauthorized, reason: "Sign in first.")
            }
            return NotificationEvents.response(for: request, messenger: messenger)
        }
    }

    @MainActor
    private func render(_ model: ConversationsViewModel, beside: Bool = false) -> ConversationListModel {
        ConversationListModel(model, page: context.info("Chats", error: context.session.avatarProblem), beside: beside)
    }

    struct ListPage: Encodable, Sendable {
        let page: PageInfo
        let list: ConversationListModel
    }

    private func list(_ request: Request) async throws -> Response {
        guard let model = await context.session.conversations else { return request.redirect(to: .home) }
        let page = await MainActor.run { () -> ListPage in
            let list = render(model)
            return ListPage(page: list.page, list: list)
        }
        return try await request.page("conversations", page)
    }

    /// The rows as they change: arrivals, reads, relative times, the connection, account notices;
    /// `?beside=chat` for the shorter list beside a chat.
    private func live(_ request: Request) throws -> Response {
        let beside = request.query[String.self, at: "beside"]
        guard beside == nil || beside == "chat" else {
            throw Abort(.badRequest, reason: "The list is shown whole, or beside a chat (beside=chat).")
        }
        return LiveRegion.response(for: request, template: "conversation-rows") {
            () async -> AsyncStream<ConversationListModel>? in
            guard let model = await context.session.conversations else { return nil }
            return await observedValues { render(model, beside: beside != nil) }
        }
    }

    struct NewMessagePage: Encodable, Sendable {
        let page: PageInfo
        let query: String
        let users: [PersonView]
        let noUsers: Bool
        let search = AppRoute.newMessage.path
    }

    private func newMessage(_ request: Request) async throws -> Response {
        guard let messenger = await context.session.messenger else { return request.redirect(to: .home) }
        let query = (try? request.query.get(String.self, at: "q")) ?? ""
        guard query.count <= 200 else { throw Abort(.badRequest, reason: "That search is too long.") }
        let page = await MainActor.run { () -> NewMessageViewModel in
            let model = NewMessageViewModel(messenger: messenger)
            model.query = query
            return model
        }
        await page.load()
        let view = await MainActor.run {
            NewMessagePage(
                page: context.info("New message", error: page.error), query: query,
                users: page.users.map(PersonView.init), noUsers: page.users.isEmpty)
        }
        return try await request.page("new-message", view)
    }
}

/// The offline banner's words for a connection state; nil when there is nothing to say.
enum ConnectionText {
    static func offline(_ state: ConnectionState) -> String? {
        switch state {
        case .live, .connecting, .stopped: nil
        // The transport's reason ("connection refused") is for the log and the CLI, not a page.
        case .waiting(let retryIn, _): "cannot reach the server; trying again in \(retryIn.components.seconds) s"
        case .signedOut: "this device was signed out; sign in again"
        }
    }
}
