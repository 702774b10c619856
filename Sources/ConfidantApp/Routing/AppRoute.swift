import ConfidantCrypto
import Foundation
import Vapor

/// A value a route takes in its path: `.key` where the route is registered (`:peer`), the value
/// itself where a link to it is built.
enum RouteValue<Value: Sendable>: Sendable {
    case key
    case value(Value)
}

/// The names of the values routes take in their paths.
enum RouteKey: String, Sendable {
    case peer, message, index, device, item, file, user, name, group
}

/// Every page, action and asset of the app in one place: routes are registered from it
/// (``pathComponents``), and every link, form action and redirect is built from it (``path``), as
/// SwiftPackageIndex-Server's `SiteURL` does.
enum AppRoute: Sendable {
    case home, unlock, signOut
    case welcome, welcomeStep, welcomeResend, welcomeCancel
    /// The picture a sign-up form chose, while the form is shown again.
    case welcomeAvatar
    case conversations, liveConversations, dismissNotices, newMessage
    /// Server-Sent Events of arrivals, for the browser's notifications (`NotificationEvents`).
    case liveNotifications
    /// `?q=` over this device's messages; `&in=` one conversation.
    case search
    /// A form posting `email`: the chat with whoever has that e-mail.
    case chatWith
    case chat(RouteValue<UUID>)
    case liveChat(RouteValue<UUID>)
    case send(RouteValue<UUID>)
    /// POST `draft` (and `replyTo`): keeps what the composer holds, as it is typed.
    case draft(RouteValue<UUID>)
    /// POST: the conversation counts as unread until it is opened again.
    case markUnread(RouteValue<UUID>)
    case retry(RouteValue<UUID>, message: RouteValue<UUID>)
    case attach(RouteValue<UUID>)
    case file(RouteValue<UUID>, message: RouteValue<UUID>, index: RouteValue<Int>)
    case editMessage(RouteValue<UUID>, message: RouteValue<UUID>)
    /// GET: the page that asks how; POST: deletes one's own message for everyone.
    case deleteMessage(RouteValue<UUID>, message: RouteValue<UUID>)
    case deleteForMe(RouteValue<UUID>, message: RouteValue<UUID>)
    /// POST `emoji`: sets one's reaction to it, or takes it back when it is the one already set.
    case react(RouteValue<UUID>, message: RouteValue<UUID>)
    case timer(RouteValue<UUID>)
    case verify(RouteValue<UUID>)
    case unverify(RouteValue<UUID>)
    /// The safety number with one device as a QR code; the path's last part is `<device>.svg`.
    case verifyCode(RouteValue<UUID>, device: RouteValue<UUID>)
    case vault, vaultCreate, vaultUnlock, vaultLock, vaultMemories, vaultBackup, vaultRestore, liveVaultTransfer
    /// GET: asks before deleting; POST: deletes the memory.
    case deleteMemory(RouteValue<UUID>)
    case editMemory(RouteValue<UUID>)
    case vaultMedia(RouteValue<UUID>)
    case vaultPhoto(RouteValue<UUID>)
    case avatar(RouteValue<UUID>)
    case profile, profileName, profileAvatar
    case settings, settingsSignIn, settingsTOTP, settingsTOTPCode, settingsReceipts, deleteAccount
    case removeDevice(RouteValue<UUID>)
    case renameDevice(RouteValue<UUID>)
    /// GET: the groups and a form for a new one; `createGroup` posts it.
    case groups, createGroup
    case group(RouteValue<UUID>)
    case groupSend(RouteValue<UUID>)
    case groupDraft(RouteValue<UUID>)
    /// POST `emoji`: one's reaction to a group message, or taking it back (as `react` in a chat).
    case groupReact(RouteValue<UUID>, message: RouteValue<UUID>)
    case groupAdd(RouteValue<UUID>)
    case groupLeave(RouteValue<UUID>)
    /// POST (admins): take a member out of the group; set its disappearing timer.
    case groupRemove(RouteValue<UUID>)
    case groupTimer(RouteValue<UUID>)
    case asset(RouteValue<String>)
    /// What a browser asks for on its own: the app's icon (`icon.svg`).
    case favicon

    /// One part of a path: fixed text, or a value the route takes.
    private enum Segment {
        case fixed(String)
        case value(RouteKey, String?)

        static func id(_ key: RouteKey, _ value: RouteValue<UUID>, suffix: String = "") -> Segment {
            switch value {
            case .key: .value(key, nil)
            case .value(let id): .value(key, id.canonicalString + suffix)
            }
        }

        static func text(_ key: RouteKey, _ value: RouteValue<String>) -> Segment {
            switch value {
            case .key: .value(key, nil)
            case .value(let text): .value(key, text.addingPercentEncoding(withAllowedCharacters: AppRoute.unreserved))
            }
        }

        static func number(_ key: RouteKey, _ value: RouteValue<Int>) -> Segment {
            switch value {
            case .key: .value(key, nil)
            case .value(let number): .value(key, String(number))
            }
        }
    }

    private var segments: [Segment] {
        switch self {
        case .home: []
        case .unlock: [.fixed("unlock")]
        case .signOut: [.fixed("sign-out")]
        case .welcome: [.fixed("welcome")]
        case .welcomeStep: [.fixed("welcome"), .fixed("step")]
        case .welcomeResend: [.fixed("welcome"), .fixed("resend")]
        case .welcomeCancel: [.fixed("welcome"), .fixed("cancel")]
        case .welcomeAvatar: [.fixed("welcome"), .fixed("avatar")]
        case .conversations: [.fixed("conversations")]
        case .liveConversations: [.fixed("live"), .fixed("conversations")]
        case .liveNotifications: [.fixed("live"), .fixed("notifications")]
        case .dismissNotices: [.fixed("conversations"), .fixed("dismiss-notices")]
        case .newMessage: [.fixed("new")]
        case .search: [.fixed("search")]
        case .chatWith: [.fixed("chat"), .fixed("with")]
        case .chat(let peer): [.fixed("chat"), .id(.peer, peer)]
        case .liveChat(let peer): [.fixed("live"), .fixed("chat"), .id(.peer, peer)]
        case .send(let peer): [.fixed("chat"), .id(.peer, peer), .fixed("send")]
        case .draft(let peer): [.fixed("chat"), .id(.peer, peer), .fixed("draft")]
        case .markUnread(let peer): [.fixed("chat"), .id(.peer, peer), .fixed("unread")]
        case .retry(let peer, let message): [.fixed("chat"), .id(.peer, peer), .fixed("retry"), .id(.message, message)]
        case .attach(let peer): [.fixed("chat"), .id(.peer, peer), .fixed("attach")]
        case .file(let peer, let message, let index):
            [.fixed("chat"), .id(.peer, peer), .fixed("files"), .id(.message, message), .number(.index, index)]
        case .editMessage(let peer, let message):
            [.fixed("chat"), .id(.peer, peer), .fixed("messages"), .id(.message, message), .fixed("edit")]
        case .deleteMessage(let peer, let message):
            [.fixed("chat"), .id(.peer, peer), .fixed("messages"), .id(.message, message), .fixed("delete")]
        case .deleteForMe(let peer, let message):
            [.fixed("chat"), .id(.peer, peer), .fixed("messages"), .id(.message, message), .fixed("delete-for-me")]
        case .react(let peer, let message):
            [.fixed("chat"), .id(.peer, peer), .fixed("messages"), .id(.message, message), .fixed("react")]
        case .timer(let peer): [.fixed("chat"), .id(.peer, peer), .fixed("timer")]
        case .verify(let peer): [.fixed("chat"), .id(.peer, peer), .fixed("verify")]
        case .unverify(let peer): [.fixed("chat"), .id(.peer, peer), .fixed("unverify")]
        case .verifyCode(let peer, let device):
            [.fixed("chat"), .id(.peer, peer), .fixed("verify"), .id(.device, device, suffix: ".svg")]
        case .vault: [.fixed("vault")]
        case .vaultCreate: [.fixed("vault"), .fixed("create")]
        case .vaultUnlock: [.fixed("vault"), .fixed("unlock")]
        case .vaultLock: [.fixed("vault"), .fixed("lock")]
        case .vaultMemories: [.fixed("vault"), .fixed("memories")]
        case .vaultBackup: [.fixed("vault"), .fixed("backup")]
        case .vaultRestore: [.fixed("vault"), .fixed("restore")]
        case .liveVaultTransfer: [.fixed("live"), .fixed("vault-transfer")]
        case .deleteMemory(let item): [.fixed("vault"), .fixed("memories"), .id(.item, item), .fixed("delete")]
        case .editMemory(let item): [.fixed("vault"), .fixed("memories"), .id(.item, item), .fixed("edit")]
        case .vaultMedia(let file): [.fixed("vault"), .fixed("media"), .id(.file, file)]
        case .vaultPhoto(let file): [.fixed("vault"), .fixed("photos"), .id(.file, file)]
        case .avatar(let user): [.fixed("avatars"), .id(.user, user)]
        case .profile: [.fixed("profile")]
        case .profileName: [.fixed("profile"), .fixed("name")]
        case .profileAvatar: [.fixed("profile"), .fixed("avatar")]
        case .settings: [.fixed("settings")]
        case .settingsSignIn: [.fixed("settings"), .fixed("sign-in")]
        case .settingsTOTP: [.fixed("settings"), .fixed("totp")]
        case .settingsTOTPCode: [.fixed("settings"), .fixed("totp.svg")]
        case .settingsReceipts: [.fixed("settings"), .fixed("receipts")]
        case .deleteAccount: [.fixed("settings"), .fixed("delete")]
        case .removeDevice(let device): [.fixed("settings"), .fixed("devices"), .id(.device, device), .fixed("remove")]
        case .renameDevice(let device): [.fixed("settings"), .fixed("devices"), .id(.device, device), .fixed("name")]
        case .groups: [.fixed("groups")]
        case .createGroup: [.fixed("groups"), .fixed("new")]
        case .group(let group): [.fixed("groups"), .id(.group, group)]
        case .groupSend(let group): [.fixed("groups"), .id(.group, group), .fixed("send")]
        case .groupDraft(let group): [.fixed("groups"), .id(.group, group), .fixed("draft")]
        case .groupReact(let group, let message):
            [.fixed("groups"), .id(.group, group), .fixed("messages"), .id(.message, message), .fixed("react")]
        case .groupAdd(let group): [.fixed("groups"), .id(.group, group), .fixed("add")]
        case .groupLeave(let group): [.fixed("groups"), .id(.group, group), .fixed("leave")]
        case .groupRemove(let group): [.fixed("groups"), .id(.group, group), .fixed("remove")]
        case .groupTimer(let group): [.fixed("groups"), .id(.group, group), .fixed("timer")]
        case .asset(let name): [.fixed("assets"), .text(.name, name)]
        case .favicon: [.fixed("favicon.ico")]
        }
    }

    /// The route as registered: fixed parts and `:key` parameters.
    var pathComponents: [PathComponent] {
        segments.map { segment in
            switch segment {
            case .fixed(let text): .constant(text)
            case .value(let key, _): .parameter(key.rawValue)
            }
        }
    }

    /// The path of a link, form or redirect to this route, with its values filled in.
    var path: String {
        "/"
            + segments.map { segment in
                switch segment {
                case .fixed(let text): text
                case .value(let key, let value): value ?? ":\(key.rawValue)"
                }
            }.joined(separator: "/")
    }

    /// ``path`` with a query and a fragment, every name and value percent-encoded but letters and
    /// digits (so `+`, `&` and `=` in an e-mail survive).
    func path(query: KeyValuePairs<String, String> = [:], fragment: String? = nil) -> String {
        func encoded(_ text: String) -> String {
            text.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? ""
        }
        var result = path
        if !query.isEmpty {
            result += "?" + query.map { "\(encoded($0.key))=\(encoded($0.value))" }.joined(separator: "&")
        }
        if let fragment { result += "#" + encoded(fragment) }
        return result
    }

    /// RFC 3986's unreserved characters: what a path part, a query value or a fragment may hold
    /// as it is.
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
