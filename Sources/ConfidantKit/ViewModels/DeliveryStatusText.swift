import Foundation

/// How a message's delivery reads, in one place for every screen: the CLI's lines and JSON, the
/// app's bubbles.
public enum DeliveryStatusText {
    /// One word for lists and JSON: "received", "pending", "sent", "delivered", "read", or
    /// "failed: " and the reason.
    public static func label(_ status: ChatMessage.Status) -> String {
        switch status {
        case .received: "received"
        case .pending: "pending"
        case .sent: "sent"
        case .delivered: "delivered"
        case .read: "read"
        case .failed(let failure): "failed: \(failure)"
        }
    }

    /// The words beside one's own message ("sent ✓", "waiting for the server (trying again in
    /// 8 s)", "not sent: …"); nil for the peer's lines and notices.
    public static func describe(_ message: ChatMessage, now: Date = Date()) -> String? {
        guard message.direction == .outgoing else { return nil }
        switch message.status {
        case .pending:
            return message.retryAt.map { "waiting for the server (trying again \(retry(at: $0, now: now)))" }
                ?? "sending"
        case .sent: return "sent ✓"
        case .delivered: return "delivered ✓✓"
        case .read: return "read ✓✓"
        case .failed(let failure): return "not sent: \(failure)"
        case .received: return nil
        }
    }

    /// When an automatic retry is due: "now", "in 8 s", "in 2 min".
    public static func retry(at date: Date, now: Date = Date()) -> String {
        let remaining = date.timeIntervalSince(now).rounded(.up)
        guard remaining >= 1 else { return "now" }
        // Bounded before the conversion: a date far off must not trap.
        let seconds = Int(min(remaining, 86_400 * 365))
        return seconds < 120 ? "in \(seconds) s" : "in \(seconds / 60) min"
    }
}
