import ConfidantCrypto
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
    /// Unread messages in all conversations, for the title ("(3) Chats · Confidant").
    var unread = 0
    /// The signed-in user's name and picture, for the conversation list's header.
    var myName: String?
    var myAvatar: String?
    var links = Links.shared

    /// The app's routes that take no value, for every page's links and forms (built once).
    struct Links: Encodable, Sendable {
        let home = AppRoute.home.path
        let style = AppRoute.asset(.value("app.css")).path
        let script = AppRoute.asset(.value("app.js")).path
        let notificationsScript = AppRoute.asset(.value("notifications.js")).path
        let icon = AppRoute.asset(.value("icon.svg")).path
        let unlock = AppRoute.unlock.path
        let signOut = AppRoute.signOut.path
        let welcome = AppRoute.welcome.path
        let signUp = AppRoute.welcome.path(query: ["mode": "sign-up"])
        let welcomeStep = AppRoute.welcomeStep.path
        let welcomeResend = AppRoute.welcomeResend.path
        let welcomeCancel = AppRoute.welcomeCancel.path
        let conversations = AppRoute.conversations.path
        let groups = AppRoute.groups.path
        let newMessage = AppRoute.newMessage.path
        let search = AppRoute.search.path
        let liveNotifications = AppRoute.liveNotifications.path
        /// A form's action: the chat with whoever has the e-mail it posts (adds them as a contact).
        let chatWith = AppRoute.chatWith.path
        let vault = AppRoute.vault.path
        let vaultCreate = AppRoute.vaultCreate.path
        let vaultUnlock = AppRoute.vaultUnlock.path
        let vaultLock = AppRoute.vaultLock.path
        let vaultMemories = AppRoute.vaultMemories.path
        let vaultBackup = AppRoute.vaultBackup.path
        let vaultRestore = AppRoute.vaultRestore.path
        let liveVaultTransfer = AppRoute.liveVaultTransfer.path
        let profile = AppRoute.profile.path
        let profileName = AppRoute.profileName.path
        let profileAvatar = AppRoute.profileAvatar.path
        let settings = AppRoute.settings.path
        let settingsSignIn = AppRoute.settingsSignIn.path
        let settingsTOTP = AppRoute.settingsTOTP.path
        let settingsTOTPCode = AppRoute.settingsTOTPCode.path
        let deleteAccount = AppRoute.deleteAccount.path

        static let shared = Links()
    }
}

/// A person as the pages draw them: a coloured circle with initials (no picture is fetched from
/// anywhere), the name, and the e-mail.
struct PersonView: Encodable, Sendable {
    let peerID: String
    let name: String
    let email: String
    let initials: String
    let hue: Int
    /// Their picture, their chat and its verification page.
    let avatar: String
    let chat: String
    let verify: String

    init(_ contact: Contact) {
        peerID = contact.id.canonicalString
        name = contact.displayName
        email = contact.email
        initials = Self.initials(contact.displayName.isEmpty ? contact.email : contact.displayName)
        hue = Self.hue(contact.id)
        avatar = AppRoute.avatar(.value(contact.id)).path
        chat = AppRoute.chat(.value(contact.id)).path
        verify = AppRoute.verify(.value(contact.id)).path
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
            signedInAs: session.messenger.map { _ in session.signedInName }, error: error,
            unread: session.conversations?.rows.reduce(0) { $0 + $1.summary.shownUnread } ?? 0,
            myName: session.messenger.map { _ in session.signedInDisplayName },
            myAvatar: session.myID.map { AppRoute.avatar(.value($0)).path })
    }
}
