import Foundation

/// How text becomes what the search index holds and what a query looks up (docs/PROTOCOL.md §8,
/// "Search index"): words folded to lower case without diacritics or width (so "Café" and
/// "cafe", "Ёлка" and "елка" match), split at anything that is not a letter or a digit; each
/// word is indexed by its prefixes of 3 to ``longestPrefix`` characters (a word of 3 or fewer
/// by itself), so that a query word finds the words it begins. Pure: the store keys and stores.
public enum SearchTerms {
    /// The shortest prefix indexed; shorter words are indexed whole (and found only whole).
    public static let shortestPrefix = 3
    /// The longest prefix indexed: a longer query word is looked up by its first 6 characters,
    /// and the messages found are checked against the whole word (6 keeps the index small for
    /// long words, as Russian and Ukrainian have, and is selective enough to look up).
    public static let longestPrefix = 6
    /// The most distinct words of one message the index holds (a 60 KB message has thousands):
    /// the first ones. Bounds the index's rows per message.
    public static let maximumWordsPerMessage = 1_000
    /// The most words of a query that count; more are ignored.
    public static let maximumQueryWords = 8

    /// The folded words of `text`, in order.
    public static func words(_ text: String) -> [String] {
        text.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
            .split { !($0.isLetter || $0.isNumber) }
            .map(String.init)
    }

    /// What the index holds for a message's texts (its text and its files' names): every
    /// indexed prefix of its first ``maximumWordsPerMessage`` distinct words, each once.
    static func indexKeys(of texts: [String]) -> Set<String> {
        var seen = Set<String>()
        var keys = Set<String>()
        for text in texts {
            for word in words(text) where seen.count < maximumWordsPerMessage {
                guard seen.insert(word).inserted else { continue }
                keys.formUnion(prefixes(of: word))
            }
        }
        return keys
    }

    /// The query's distinct words (at most ``maximumQueryWords``), in order.
    static func queryWords(_ query: String) -> [String] {
        var seen = Set<String>()
        return Array(words(query).filter { seen.insert($0).inserted }.prefix(maximumQueryWords))
    }

    /// The key a query word is looked up by: itself, or its first ``longestPrefix`` characters.
    static func lookupKey(of word: String) -> String { String(word.prefix(longestPrefix)) }

    /// Whether a message's texts hold, for every query word, a word it begins: what a message the
    /// index found is checked against (a longer query word, or two keys that hash alike).
    static func matches(_ queryWords: [String], in texts: [String]) -> Bool {
        let held = texts.flatMap(words)
        return queryWords.allSatisfy { query in
            held.contains { $0.hasPrefix(query) && ($0.count == query.count || query.count >= shortestPrefix) }
        }
    }

    private static func prefixes(of word: String) -> [String] {
        let count = word.count
        guard count > shortestPrefix else { return [word] }
        return (shortestPrefix...min(count, longestPrefix)).map { String(word.prefix($0)) }
    }
}
