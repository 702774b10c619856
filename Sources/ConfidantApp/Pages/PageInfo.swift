import ConfidantKit
import Foundation
import Vapor

/// What every page's template reads besides its own data: the title, the form token, who is
/// signed in (the navigation shows only then), and a problem to show at the top.
struct PageInfo: Encodable, Sendable {
    let title: String
    let csrf: String
    let signedInAs: String?
    let error: String?
}

/// A person as the pages draw them: a coloured circle with initials (no picture is fetched from
/// anywhere), the name, and the e-mail.
struct PersonView: Encodable, Sendable {
    let peerID: String
    let name: String
    let email: String
    let initials: String
    let hue: Int
    /// The e-mail as a query value (`/chat/with?email=`).
    let emailQuery: String

    init(_ contact: Contact) {
        peerID = contact.id.uuidString.lowercased()
        name = contact.displayName
        email = contact.email
        initials = Self.initials(contact.displayName.isEmpty ? contact.email : contact.displayName)
        hue = Self.hue(contact.id)
        emailQuery = contact.email.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }

    static func initials(_ name: String) -> String {
        let words = name.split(whereSeparator: { $0.isWhitespace || $0 == "@" || $0 == "." }).prefix(2)
        return words.compactMap { $0.first.map { String($0).uppercased() } }.joined()
    }

    /// One of eight colours, the same for a person everywhere.
    static func hue(_ id: UUID) -> Int { Int(id.uuid.15 % 8) }
}

extension Request {
    /// A template rendered with `context`, as a page.
    func page(_ template: String, _ context: some Encodable & Sendable, status: HTTPStatus = .ok) async throws
        -> Response
    {
        let view = try await view.render(template, context)
        let response = try await view.encodeResponse(for: self)
        response.status = status
        return response
    }
}

/// What the routes share: the session on the main actor, the launch's secrets, the logger.
struct AppContext: Sendable {
    let session: AppSession
    let secrets: LaunchSecrets

    /// The common part of a page, read on the main actor.
    @MainActor
    func info(_ title: String, error: String? = nil) -> PageInfo {
        PageInfo(
            title: title, csrf: secrets.formToken,
            signedInAs: session.messenger.map { _ in session.signedInName }, error: error)
    }
}
