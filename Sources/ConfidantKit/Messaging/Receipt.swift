import Foundation

/// A delivery or read receipt (payload kind 3): sealed like any message, so the relay can
/// neither read nor forge it.
public struct Receipt: Sendable, Hashable, Codable {
    /// What happened to the messages.
    public enum Kind: String, Sendable, Codable {
        /// A device of the recipient stored them.
        case delivered
        /// The recipient saw them.
        case read
    }

    /// Delivered or read.
    public let type: Kind
    /// The messages it is about (the sender's message ids).
    public let messageIDs: [UUID]

    /// A receipt for `messageIDs`.
    public init(_ type: Kind, messageIDs: [UUID]) {
        self.type = type
        self.messageIDs = messageIDs
    }

    private enum CodingKeys: String, CodingKey {
        case type
        case messageIDs = "messageIds"
    }

    /// The JSON body, byte for byte as `JSONEncoder` with sorted keys writes it
    /// (`{"messageIds":[…],"type":…}`), written without it: every batch of messages received
    /// queues a receipt. Ids and the two kinds need no escaping.
    var json: Data {
        var text = #"{"messageIds":["#
        text.reserveCapacity(40 * messageIDs.count + 32)
        for (index, id) in messageIDs.enumerated() {
            text += index == 0 ? "\"" : ",\""
            text += id.uuidString
            text += "\""
        }
        text += #"],"type":""#
        text += type.rawValue
        text += #""}"#
        return Data(text.utf8)
    }
}
