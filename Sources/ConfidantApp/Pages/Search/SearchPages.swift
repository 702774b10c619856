import ConfidantKit
import Foundation
import Vapor

/// `GET /search?q=…[&in=CONVERSATION]`: this device's messages holding the query's words
/// (``Messenger/search(_:in:limit:)``), newest first, each linking to its line in its chat.
struct SearchPages {
    let context: AppContext
    let indexing: SearchIndexing

    /// The most characters a query may have.
    static let maximumQuery = 200
    /// The most results a page shows.
    static let resultsShown = 100

    func register(on routes: any RoutesBuilder) {
        routes.get(.search) { request in try await search(request) }
    }

    private func search(_ request: Request) async throws -> Response {
        guard let messenger = await context.session.messenger else { return request.redirect(to: .home) }
        let query = request.query[String.self, at: "q"] ?? ""
        guard query.count <= Self.maximumQuery else {
            throw Abort(.badRequest, reason: "A search has at most \(Self.maximumQuery) characters.")
        }
        var within: UUID?
        if let text = request.query[String.self, at: "in"] {
            guard let id = UUID(uuidString: text) else { throw Abort(.badRequest, reason: "There is no such chat.") }
            within = id
        }
        let backlog = try await messenger.searchBacklog()
        if backlog > 0 { await indexing.start(messenger) }
        let hits =
            query.isEmpty ? [] : try await messenger.search(query, in: within, limit: Self.resultsShown)
        var details = SearchPageModel.Context()
        for conversation in Set(hits.map(\.message.peer) + (within.map { [$0] } ?? [])) {
            if let contact = try await messenger.knownContact(conversation) {
                details.conversationNames[conversation] = contact.displayName
            } else if let group = try? await messenger.group(conversation) {
                details.conversationNames[conversation] = group.state.name
                details.groups.insert(conversation)
            } else if conversation == within {
                throw Abort(.notFound, reason: "There is no such chat on this device.")
            }
        }
        let me = await messenger.me
        for author in Set(hits.compactMap(\.message.author)) {
            details.authorNames[author] =
                author == me ? "You" : (try await messenger.knownContact(author))?.displayName
        }
        for hit in hits { details.linesSince[hit.message.id] = try await messenger.linesSince(hit.message) }
        let timeline = ChatTimeline(calendar: .current, now: Date())
        let page = await MainActor.run {
            SearchPageModel(
                page: context.info(query.isEmpty ? "Search" : "\(query) · Search"), query: query, within: within,
                hits: hits, context: details, backlog: backlog, timeline: timeline)
        }
        return try await request.page("search", page)
    }
}
