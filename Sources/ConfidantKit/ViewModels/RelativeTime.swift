import Foundation

/// "just now", "5 min ago", "3 h ago", "yesterday", "4 days ago", then the date — the seed's
/// "time ago" on the conversation list.
public enum RelativeTime {
    /// How long before `now` `date` was, in the seed's words.
    public static func describe(_ date: Date, now: Date = Date()) -> String {
        let seconds = now.timeIntervalSince(date)
        switch seconds {
        case ..<60: return "just now"
        case ..<3_600: return "\(Int(seconds / 60)) min ago"
        case ..<86_400: return "\(Int(seconds / 3_600)) h ago"
        case ..<172_800: return "yesterday"
        case ..<604_800: return "\(Int(seconds / 86_400)) days ago"
        default: return date.formatted(.iso8601.year().month().day())
        }
    }
}
