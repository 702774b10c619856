/// Text that others wrote — messages, names, e-mail addresses, reasons from the server — made
/// safe to print. A terminal acts on control characters: an escape sequence in a message could
/// move the cursor and rewrite what is on screen (a forged line "Alice: …"), change the window
/// title, or on some terminals make it answer as if typed. Removed: C0 controls but newline
/// (kept, or a space inside a table cell) and tab (a space), DEL, the C1 controls (U+0080…U+009F,
/// whose U+009B is a one-character CSI), and the bidirectional overrides and isolates
/// (U+202A…U+202E, U+2066…U+2069) that can make text read in another order than it is.
enum TerminalText {
    static func printable(_ text: some StringProtocol, keepingNewlines: Bool = true) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A: scalars.append(keepingNewlines ? scalar : " ")
            case 0x09: scalars.append(" ")
            case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: continue
            default: scalars.append(scalar)
            }
        }
        return String(scalars)
    }
}
