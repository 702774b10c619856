import Foundation

/// What a reaction may be (docs/PROTOCOL.md §8, kind 10): one emoji — a single character, at
/// most 32 bytes of UTF-8, shown as an emoji (a scalar with emoji presentation, or one asked for
/// with U+FE0F) — so that a reaction cannot carry a message of its own.
public enum ReactionEmoji {
    /// The longest reaction in UTF-8 (a family or a flag with its modifiers fits).
    public static let maximumBytes = 32

    /// The reactions the app offers in one tap; any other emoji is as valid.
    public static let offered = ["👍", "❤️", "😂", "😮", "😢", "🙏"]

    /// Whether `text` is one emoji a reaction may be.
    public static func accepts(_ text: String) -> Bool {
        guard text.count == 1, text.utf8.count <= maximumBytes else { return false }
        return text.unicodeScalars.contains { $0.properties.isEmojiPresentation || $0.value == 0xFE0F }
    }
}

/// The JSON body of a reaction payload.
struct ReactionBody: Codable {
    let messageId: UUID
    let emoji: String?
}

/// One person's reaction to a message.
public struct ChatReaction: Sendable, Hashable, Codable {
    /// The emoji.
    public let emoji: String
    /// Who reacted.
    public let reactor: UUID
    /// When they did (their clock); a later reaction of theirs replaces it.
    public let at: Date

    /// A reaction by `reactor`.
    public init(emoji: String, reactor: UUID, at: Date) {
        self.emoji = emoji
        self.reactor = reactor
        self.at = at
    }

    /// Each emoji among `reactions` with how many chose it, in the order each first came.
    public static func counts(_ reactions: [ChatReaction]) -> [(emoji: String, count: Int)] {
        var order: [String] = []
        var counts: [String: Int] = [:]
        for reaction in reactions {
            if counts[reaction.emoji] == nil { order.append(reaction.emoji) }
            counts[reaction.emoji, default: 0] += 1
        }
        return order.map { ($0, counts[$0] ?? 0) }
    }

    /// `reactions` in a line: "👍 2 🎉 1"; empty when there are none.
    public static func summary(_ reactions: [ChatReaction]) -> String {
        counts(reactions).map { "\($0.emoji) \($0.count)" }.joined(separator: " ")
    }
}
