import ConfidantKit
import Foundation

/// One of the account's devices on the settings page: its name, when it was last active in
/// words ("Active now", "Active today at 14:05", "Active 1 December"), and its actions.
struct DeviceView: Encodable, Sendable {
    /// Seen this recently counts as now (the relay records activity to within 5 minutes).
    static let nowWindow: TimeInterval = 10 * 60

    let id: String
    let name: String
    let shortID: String
    let isThisDevice: Bool
    let lastActive: String
    /// The full date of the last activity, for a tooltip; empty when never seen.
    let lastActiveFull: String
    let remove: String
    let rename: String
    let maximumNameLength = OwnDevice.maximumNameLength

    init(_ device: OwnDevice, timeline: ChatTimeline) {
        id = device.id.canonicalString
        name = device.displayName
        shortID = device.shortID
        isThisDevice = device.isThisDevice
        lastActive = Self.lastActive(device.lastSeenAt, timeline: timeline)
        lastActiveFull = device.lastSeenAt.map(timeline.fullTime) ?? ""
        remove = AppRoute.removeDevice(.value(device.id)).path
        rename = AppRoute.renameDevice(.value(device.id)).path
    }

    static func lastActive(_ seen: Date?, timeline: ChatTimeline) -> String {
        guard let seen else { return "Not active yet" }
        if timeline.now.timeIntervalSince(seen) < nowWindow { return "Active now" }
        let day = timeline.dayLabel(seen)
        switch day {
        case "Today", "Yesterday": return "Active \(day.lowercased()) at \(timeline.shortTime(seen))"
        default: return "Active \(day)"
        }
    }
}
