import ConfidantKit
import Foundation
import Vapor

/// Profile pictures: `/avatars/USER` serves a user's picture from the relay (kept for five
/// minutes), or draws their initials on their colour when they have none; `/profile` sets your own
/// picture and the name others see.
struct AvatarPages {
    let context: AppContext
    let cache: AvatarCache

    func register(on routes: any RoutesBuilder) {
        routes.get(.avatar(.key)) { request in try await avatar(request) }
        routes.get(.profile) { request in try await profile(request) }
        routes.post(.profileAvatar, maximumBody: AvatarUpload.maximumRequestBytes) { request in
            try await upload(request)
        }
        routes.post(.profileName) { request in try await rename(request) }
    }

    private func avatar(_ request: Request) async throws -> Response {
        guard let messenger = await context.session.messenger else {
            throw Abort(.unauthorized, reason: "Sign in first.")
        }
        guard let id = request.uuid(.user) else {
            throw Abort(.notFound, reason: "There is no such user.")
        }
        var headers = HTTPHeaders()
        // The picture may be cached by this browser only, for a little while.
        headers.replaceOrAdd(name: .cacheControl, value: "private, max-age=60")
        if let avatar = await cache.avatar(of: id, messenger: messenger) {
            headers.replaceOrAdd(name: .contentType, value: avatar.contentType)
            return Response(status: .ok, headers: headers, body: .init(data: avatar.data))
        }
        let name: String
        if id == (await messenger.me) {
            name = await messenger.account.displayName
        } else {
            name = try await messenger.knownContact(id)?.displayName ?? "?"
        }
        headers.replaceOrAdd(name: .contentType, value: "image/svg+xml")
        return Response(status: .ok, headers: headers, body: .init(string: Self.initialsImage(name, id: id)))
    }

    /// A circle in the user's colour with their initials: letters and digits only, so nothing
    /// in a name reaches the SVG's markup.
    static func initialsImage(_ name: String, id: UUID) -> String {
        let colours = ["#2a62d6", "#0f8a5f", "#b4468b", "#c25e12", "#6b4fd0", "#0b7f95", "#a23a3a", "#58702a"]
        let initials = String(PersonView.initials(name).filter { $0.isLetter || $0.isNumber }.prefix(2))
        return """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 40 40"><circle cx="20" cy="20" r="20" \
            fill="\(colours[PersonView.hue(id)])"/><text x="20" y="25.5" text-anchor="middle" font-family="sans-serif" \
            font-size="15" font-weight="700" fill="#fff">\(initials.isEmpty ? "?" : initials)</text></svg>
            """
    }

    struct ProfilePage: Encodable, Sendable {
        let page: PageInfo
        let me: PersonView
        let saved: Bool
        let renamed: Bool
    }

    private func profile(_ request: Request, error: String? = nil, status: HTTPStatus = .ok) async throws -> Response {
        guard let messenger = await context.session.messenger else { return request.redirect(to: .home) }
        let account = await messenger.account
        let me = PersonView(Contact(id: account.userID, email: account.email, displayName: account.displayName))
        let saved = (try? request.query.get(String.self, at: "saved")) == "picture"
        let renamed = (try? request.query.get(String.self, at: "saved")) == "name"
        let page = await ProfilePage(
            page: context.info("Profile", error: error), me: me, saved: saved && error == nil,
            renamed: renamed && error == nil)
        return try await request.page("profile", page, status: status)
    }

    private struct AvatarForm: Content {
        var avatar: File
    }

    private func upload(_ request: Request) async throws -> Response {
        guard let messenger = await context.session.messenger else { return request.redirect(to: .home) }
        let form = try request.content.decode(AvatarForm.self)
        do {
            let avatar = try Avatar(Data(buffer: form.avatar.data))
            try await messenger.setAvatar(avatar)
            await cache.forget(await messenger.me)
        } catch let error as ConfidantKitError {
            return try await profile(request, error: error.description, status: .unprocessableEntity)
        }
        return request.redirect(to: .profile, query: ["saved": "picture"])
    }

    private struct NameForm: Content {
        var displayName: String
    }

    private func rename(_ request: Request) async throws -> Response {
        guard let messenger = await context.session.messenger else { return request.redirect(to: .home) }
        let form = try request.content.decode(NameForm.self)
        guard form.displayName.count <= 400 else { throw Abort(.payloadTooLarge, reason: "That name is too long.") }
        do {
            try await messenger.updateProfile(displayName: form.displayName)
        } catch let error as ConfidantKitError {
            let message: String
            if case .server(_, _, let text) = error { message = text } else { message = error.description }
            return try await profile(request, error: message, status: .unprocessableEntity)
        }
        await context.session.accountRenamed()
        return request.redirect(to: .profile, query: ["saved": "name"])
    }
}

/// Limits of a picture posted through a form.
enum AvatarUpload {
    /// The picture and the form around it.
    static let maximumRequestBytes = Avatar.maximumBytes + 64 * 1024
}

/// Pictures fetched from the relay, kept for five minutes (a list of 1,000 conversations asks
/// for each once, not on every update).
actor AvatarCache {
    private var entries: [UUID: (avatar: Avatar?, fetched: ContinuousClock.Instant)] = [:]
    private let lifetime: Duration = .seconds(300)

    func avatar(of user: UUID, messenger: Messenger) async -> Avatar? {
        if let entry = entries[user], entry.fetched.duration(to: .now) < lifetime { return entry.avatar }
        do {
            let avatar = try await messenger.avatar(of: user)
            if entries.count > 10_000 { entries.removeAll() }
            entries[user] = (avatar, .now)
            return avatar
        } catch {
            // Unreachable server or a damaged picture: initials this time, asked again next time.
            return nil
        }
    }

    func forget(_ user: UUID) { entries[user] = nil }
}
