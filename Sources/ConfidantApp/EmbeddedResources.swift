import Foundation
import LeafKit
import NIOCore
import Vapor

/// The templates, style sheet and script, compiled into the binary (`Resources/`, embedded by
/// the package manager): the app reads nothing from disk and fetches nothing from anywhere.
enum EmbeddedResources {
    static let templates: [String: [UInt8]] = [
        "base": PackageResources.base_leaf, "unlock": PackageResources.unlock_leaf,
        "welcome": PackageResources.welcome_leaf, "conversations": PackageResources.conversations_leaf,
        "conversation-rows": PackageResources.conversation_rows_leaf,
        "new-message": PackageResources.new_message_leaf, "chat": PackageResources.chat_leaf,
        "chat-messages": PackageResources.chat_messages_leaf, "verify": PackageResources.verify_leaf,
        "problem": PackageResources.problem_leaf, "vault": PackageResources.vault_leaf,
        "profile": PackageResources.profile_leaf, "settings": PackageResources.settings_leaf,
        "vault-edit": PackageResources.vault_edit_leaf, "vault-photo": PackageResources.vault_photo_leaf,
        "vault-transfer": PackageResources.vault_transfer_leaf, "chat-edit": PackageResources.chat_edit_leaf,
        "chat-delete": PackageResources.chat_delete_leaf,
        "conversation-pane": PackageResources.conversation_pane_leaf,
        "groups": PackageResources.groups_leaf, "group": PackageResources.group_leaf,
        "search": PackageResources.search_leaf, "vault-delete": PackageResources.vault_delete_leaf,
    ]

    static let assets: [String: (bytes: [UInt8], type: HTTPMediaType)] = [
        "app.css": (
            PackageResources.app_css, HTTPMediaType(type: "text", subType: "css", parameters: ["charset": "utf-8"])
        ),
        "app.js": (
            PackageResources.app_js,
            HTTPMediaType(type: "text", subType: "javascript", parameters: ["charset": "utf-8"])
        ),
        "notifications.js": (
            PackageResources.notifications_js,
            HTTPMediaType(type: "text", subType: "javascript", parameters: ["charset": "utf-8"])
        ),
        "icon.svg": (PackageResources.icon_svg, HTTPMediaType(type: "image", subType: "svg+xml")),
    ]
}

/// Leaf reads its templates from `EmbeddedResources` instead of a views directory.
struct EmbeddedTemplates: LeafSource, Sendable {
    func file(template: String, escape: Bool, on eventLoop: any EventLoop) throws -> EventLoopFuture<ByteBuffer> {
        let name = template.hasSuffix(".leaf") ? String(template.dropLast(5)) : template
        guard let bytes = EmbeddedResources.templates[name] else {
            return eventLoop.makeFailedFuture(LeafError(.noTemplateExists(template)))
        }
        return eventLoop.makeSucceededFuture(ByteBuffer(bytes: bytes))
    }
}
