import ConfidantKit
import Foundation
import Vapor

/// `GET /live/notifications`: one Server-Sent Event (`event: arrival`, JSON) for each message
/// that arrives from someone else (`MessengerEvent.message`, in a chat or a group), for the
/// page's script to show as a browser notification while the app's tab is in the background (it
/// decides whether to show the text, and stays silent while the tab is visible). Nothing leaves
/// this machine: the browser's Notification API shows it, and no push service is involved.
enum NotificationEvents {
    /// One arrival, as the script reads it.
    struct Arrival: Encodable, Sendable, Equatable {
        let conversation: String
        /// Who wrote ("Alice", or "Alice in Family" in a group).
        let name: String
        /// The message's text, or what stands for it (the script shows it only with "show text" on).
        let text: String
        /// Its chat or group page, for a click on the notification.
        let chat: String
    }

    /// The arrival `event` announces, named as `names` has the people and groups; nil for
    /// anything else (one's own messages, notices, changes).
    static func arrival(_ event: MessengerEvent, names: [UUID: String], groups: Set<UUID>) -> Arrival? {
        guard case .message(let message) = event, message.direction == .incoming else { return nil }
        let conversation = message.peer
        let inGroup = groups.contains(conversation)
        let author = inGroup ? message.author.flatMap { names[$0] } ?? "Someone" : names[conversation] ?? "Someone"
        return Arrival(
            conversation: conversation.canonicalString,
            name: inGroup ? "\(author) in \(names[conversation] ?? "a group")" : author, text: message.displayText,
            chat: inGroup ? AppRoute.group(.value(conversation)).path : AppRoute.chat(.value(conversation)).path)
    }

    static func response(for request: Request, messenger: Messenger) -> Response {
        LiveRegion.stream(buffering: 16) {
            let events = await messenger.events()
            return AsyncStream { continuation in
                let watching = Task {
                    let encoder = JSONEncoder()
                    for await event in events {
                        guard case .message(let message) = event, message.direction == .incoming else { continue }
                        var names: [UUID: String] = [:]
                        var groups: Set<UUID> = []
                        if let contact = try? await messenger.knownContact(message.peer) {
                            names[message.peer] = contact.displayName
                        } else if let group = try? await messenger.group(message.peer) {
                            names[message.peer] = group.state.name
                            groups.insert(message.peer)
                        }
                        if let author = message.author, let contact = try? await messenger.knownContact(author) {
                            names[author] = contact.displayName
                        }
                        guard let arrival = arrival(event, names: names, groups: groups),
                            let json = try? encoder.encode(arrival)
                        else { continue }
                        continuation.yield("event: arrival\ndata: \(String(decoding: json, as: UTF8.self))\n\n")
                    }
                    continuation.finish()
                }
                continuation.onTermination = { _ in watching.cancel() }
            }
        }
    }
}
