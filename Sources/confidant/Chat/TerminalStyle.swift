import ConfidantKit
import Foundation

/// Colour on a terminal only, and never with `NO_COLOR` set (https://no-color.org). Everything
/// styled, every table cell and every conversation line goes through `TerminalText.printable`
/// first, so text from others cannot carry escape sequences of its own.
enum TerminalStyle {
    static let enabled = Terminal.stdoutIsTTY && ProcessInfo.processInfo.environment["NO_COLOR"] == nil

    static func bold(_ text: String) -> String { wrap(text, "1") }
    static func dim(_ text: String) -> String { wrap(text, "2") }
    static func warning(_ text: String) -> String { wrap(text, "33") }
    static func error(_ text: String) -> String { wrap(text, "31") }
    static func accent(_ text: String) -> String { wrap(text, "36") }

    private static func wrap(_ text: String, _ code: String) -> String {
        let text = TerminalText.printable(text)
        return enabled ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }

    /// Left-aligned columns padded to the widest cell, under a bold header row.
    static func table(_ header: [String], _ rows: [[String]]) -> String {
        aligned([header] + rows, boldFirstRow: true)
    }

    /// `label  value` lines with the values aligned, no header.
    static func pairs(_ rows: [(String, String)]) -> String {
        aligned(rows.map { [$0.0, $0.1] }, boldFirstRow: false)
    }

    private static func aligned(_ rows: [[String]], boldFirstRow: Bool) -> String {
        let all = rows.map { $0.map { TerminalText.printable($0, keepingNewlines: false) } }
        guard let header = all.first else { return "" }
        let widths = (0..<header.count).map { column in
            all.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0
        }
        return all.enumerated().map { index, row in
            let line = row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
            return index == 0 && boldFirstRow ? bold(line) : line
        }.joined(separator: "\n")
    }

    /// One conversation line: `[12:04] Alice: text`, notices and unreadable messages marked.
    static func line(_ message: ChatMessage, peerName: String) -> String {
        let time = dim("[\(clock(message.sentAt))]")
        let peerName = TerminalText.printable(peerName, keepingNewlines: false)
        var displayText = TerminalText.printable(message.displayText)
        if message.text != nil, !message.attachments.isEmpty {
            displayText +=
                " " + TerminalText.printable(message.attachments.map { "📎 \($0.name)" }.joined(separator: ", "))
        }
        if let reply = message.reply {
            // The quote first, as messengers show it: "↪ lunch at noon?" (or of a deleted message).
            let quote = message.replyTargetGone ? "\(reply.excerpt) (deleted)" : reply.excerpt
            displayText = dim("↪ " + TerminalText.printable(quote, keepingNewlines: false)) + " " + displayText
        }
        var marks = ""
        if message.editedAt != nil, !message.isDeleted { marks += dim(" (edited)") }
        if message.expiresAt != nil { marks += dim(" ⏱") }
        if !message.reactions.isEmpty {
            marks += " " + TerminalText.printable(ChatReaction.summary(message.reactions), keepingNewlines: false)
        }
        switch message.direction {
        case .notice:
            return "\(time) \(warning("⚠ \(displayText)"))"
        case .incoming:
            let text = message.isUnreadable || message.isDeleted ? error(displayText) : displayText
            return "\(time) \(accent(peerName)): \(text)\(marks)"
        case .outgoing:
            let status = DeliveryStatusText.describe(message) ?? ""
            let suffix =
                switch message.status {
                case .failed: error(" (\(status); /retry)")
                case .read: accent(" \(status)")
                case .pending: dim(" (\(status))")
                default: dim(" \(status)")
                }
            let text = message.isUnreadable || message.isDeleted ? error(displayText) : displayText
            return "\(time) \(bold("you")): \(text)\(marks)\(suffix)"
        }
    }

    private static func clock(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = Calendar.current.isDateInToday(date) ? "HH:mm" : "yyyy-MM-dd HH:mm"
        return formatter.string(from: date)
    }
}

/// JSON for `--json` output.
enum JSONOutput {
    static func print<T: Encodable>(_ value: T) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        Swift.print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }
}
