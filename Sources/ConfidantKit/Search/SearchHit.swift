import Foundation

/// One message a search found (``Messenger/search(_:in:limit:)``), with the part of its text
/// around the first word that matched.
public struct SearchHit: Sendable, Hashable, Identifiable {
    public var id: UUID { message.id }
    /// The message; its `peer` is the conversation (a contact's id, or a group's).
    public let message: ChatMessage
    /// Up to ``excerptRadius`` characters either side of the first match, with "…" where cut;
    /// a file's name when only a name matched.
    public let excerpt: String

    /// How many characters of context the excerpt keeps either side of the match.
    public static let excerptRadius = 40

    /// A hit for `message`, showing `excerpt`.
    public init(message: ChatMessage, excerpt: String) {
        self.message = message
        self.excerpt = excerpt
    }

    /// The text around the first place, among `texts`, that a query word begins a word; the
    /// first text's start when none does (a match in a word the folding changed).
    static func excerpt(of texts: [String], around queryWords: [String]) -> String {
        for text in texts {
            if let range = firstMatch(in: text, of: queryWords) { return cut(text, around: range) }
        }
        return cut(texts.first ?? "", around: nil)
    }

    private static func firstMatch(in text: String, of queryWords: [String]) -> Range<String.Index>? {
        var index = text.startIndex
        while index < text.endIndex {
            guard text[index].isLetter || text[index].isNumber else {
                index = text.index(after: index)
                continue
            }
            var end = index
            while end < text.endIndex, text[end].isLetter || text[end].isNumber { end = text.index(after: end) }
            let word = SearchTerms.words(String(text[index..<end])).first ?? ""
            if queryWords.contains(where: { word.hasPrefix($0) }) { return index..<end }
            index = end
        }
        return nil
    }

    private static func cut(_ text: String, around match: Range<String.Index>?) -> String {
        let start =
            match.flatMap { text.index($0.lowerBound, offsetBy: -excerptRadius, limitedBy: text.startIndex) }
            ?? text.startIndex
        let end =
            text.index(
                match?.upperBound ?? text.startIndex, offsetBy: match == nil ? 2 * excerptRadius : excerptRadius,
                limitedBy: text.endIndex) ?? text.endIndex
        let part = text[start..<end].split(whereSeparator: \.isNewline).joined(separator: " ")
        return (start > text.startIndex ? "…" : "") + part + (end < text.endIndex ? "…" : "")
    }
}
