/// How far a message this account wrote to a group has got: "read by 3 of 5". Members count once
/// however many devices they have; a member whose read receipts are off counts as delivered.
public struct GroupReceipts: Sendable, Hashable, Codable {
    /// Members (besides this account) with a device that has it.
    public let delivered: Int
    /// Members who have read it (a subset of `delivered`).
    public let read: Int
    /// The group's other members now.
    public let members: Int

    /// Counts as the author's device holds them.
    public init(delivered: Int, read: Int, members: Int) {
        self.delivered = delivered
        self.read = read
        self.members = members
    }

    /// "read by 3 of 5", "delivered to 2 of 5", or "sent to 5" before any receipt.
    public var summary: String {
        if read > 0 { return "read by \(read) of \(members)" }
        if delivered > 0 { return "delivered to \(delivered) of \(members)" }
        return "sent to \(members)"
    }
}
