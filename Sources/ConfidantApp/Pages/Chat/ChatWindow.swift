import Vapor

/// How many of a chat's latest lines a page shows: 200 at first, 200 more each time the user
/// scrolls to the top (or follows "Show earlier messages"), up to ``maximum`` — the page stays
/// light however long the conversation.
struct ChatWindow: Sendable, Equatable {
    static let step = 200
    static let maximum = 2_000

    let lines: Int

    init() { lines = Self.step }

    /// A window of `lines`, one the pages offer: a multiple of ``step`` up to ``maximum``.
    init?(lines: Int) {
        guard lines >= Self.step, lines <= Self.maximum, lines.isMultiple(of: Self.step) else { return nil }
        self.lines = lines
    }

    /// The `lines` query of a request; none is the first window.
    /// - Throws: 400 for any other value.
    init(_ request: Request) throws {
        guard let text = request.query[String.self, at: "lines"] else {
            self.init()
            return
        }
        guard let lines = Int(text), let window = ChatWindow(lines: lines) else {
            throw Abort(
                .badRequest, reason: "A chat shows \(Self.step) to \(Self.maximum) lines, in steps of \(Self.step).")
        }
        self = window
    }

    /// The next window, or this one at the maximum.
    var larger: ChatWindow { ChatWindow(lines: lines + Self.step) ?? self }

    /// The query naming this window in a link (none for the first).
    var query: KeyValuePairs<String, String> { lines == Self.step ? [:] : ["lines": String(lines)] }
}
