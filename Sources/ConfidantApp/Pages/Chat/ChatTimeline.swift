import Foundation

/// Where a chat's lines fall in time, as the page shows it: a day separator ("Today",
/// "Yesterday", "1 December") before the first line of each day, lines from one side within a
/// few minutes of each other drawn as a group, and each line's time short, with the full date
/// for a tooltip. Computed in the app's calendar; tests pin it. One per rendering: its
/// formatters are made once, not per line (a chat page formats 200 lines three ways).
struct ChatTimeline {
    /// Lines from one side this close together form a group.
    static let groupGap: TimeInterval = 5 * 60

    let calendar: Calendar
    let now: Date
    private let dayFormat: DateFormatter
    private let yearFormat: DateFormatter
    private let timeFormat: DateFormatter
    private let fullFormat: DateFormatter

    init(calendar: Calendar, now: Date) {
        self.calendar = calendar
        self.now = now
        func formatter(_ template: String) -> DateFormatter {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_GB")
            formatter.calendar = calendar
            formatter.timeZone = calendar.timeZone
            formatter.dateFormat = template
            return formatter
        }
        dayFormat = formatter("d MMMM")
        yearFormat = formatter("d MMMM yyyy")
        timeFormat = formatter("HH:mm")
        fullFormat = formatter("EEEE, d MMMM yyyy 'at' HH:mm")
    }

    /// "Today", "Yesterday", "1 December", or "1 December 2025" for another year.
    func dayLabel(_ date: Date) -> String {
        if calendar.isDate(date, inSameDayAs: now) { return "Today" }
        if let yesterday = calendar.date(byAdding: .day, value: -1, to: now),
            calendar.isDate(date, inSameDayAs: yesterday)
        {
            return "Yesterday"
        }
        let sameYear = calendar.component(.year, from: date) == calendar.component(.year, from: now)
        return (sameYear ? dayFormat : yearFormat).string(from: date)
    }

    /// "14:05".
    func shortTime(_ date: Date) -> String { timeFormat.string(from: date) }

    /// "Tuesday, 1 December 2026 at 14:05", for the tooltip.
    func fullTime(_ date: Date) -> String { fullFormat.string(from: date) }

    /// Whether `date` starts a new day after `previous`.
    func startsDay(_ date: Date, after previous: Date?) -> Bool {
        guard let previous else { return true }
        return !calendar.isDate(date, inSameDayAs: previous)
    }

    /// Whether a line at `date` joins the group of the line before it, written by the same side
    /// at `previous` (the same day, within ``groupGap``).
    func continuesGroup(_ date: Date, after previous: Date) -> Bool {
        !startsDay(date, after: previous) && abs(date.timeIntervalSince(previous)) <= Self.groupGap
    }
}
