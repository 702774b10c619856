import Foundation

/// One of this account's current devices, as the relay lists them to the account itself.
public struct OwnDevice: Sendable, Hashable, Identifiable {
    /// The device id.
    public let id: UUID
    /// The name the device or its user gave it; nil until named.
    public let name: String?
    /// When the device's current key was registered.
    public let registeredAt: Date
    /// When the device last signed in or called the relay, to within 5 minutes; nil if never seen.
    public let lastSeenAt: Date?
    /// Whether it is the device this profile is.
    public let isThisDevice: Bool

    /// The first 8 hex digits of the id, as shown.
    public var shortID: String { String(id.canonicalString.prefix(8)) }

    /// The name to show: the given one, else the short id.
    public var displayName: String { name ?? "Device \(shortID)" }

    /// The name a device gives itself when it signs in: its platform, which its user can change.
    public static let platformName: String = {
        #if os(macOS)
            "Confidant on a Mac"
        #elseif os(iOS)
            "Confidant on an iPhone or iPad"
        #elseif os(Linux)
            "Confidant on Linux"
        #elseif os(Windows)
            "Confidant on Windows"
        #else
            "Confidant"
        #endif
    }()

    /// The longest name the relay takes, in characters.
    public static let maximumNameLength = 40
}
