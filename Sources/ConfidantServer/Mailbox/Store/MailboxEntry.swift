import ConfidantCrypto
import Fluent
import Foundation
import SQLKit

/// An entry as stored in a device's mailbox.
struct MailboxEntry: Sendable {
    let cursor: Int64
    let kind: MailboxRecord.Kind
    let sender: DeviceAddress
    let messageID: UUID?
    /// The envelope bytes, or the JSON of a `KeyChange` or a `PrekeyStatus`.
    let payload: Data
    let receivedAt: Date
}

/// A stored entry and whose mailbox it is in.
struct AddressedEntry: Sendable {
    let recipient: DeviceAddress
    let entry: MailboxEntry
}

/// An entry to store; the database assigns the cursor.
struct NewMailboxEntry: Sendable {
    let recipient: DeviceAddress
    let kind: MailboxRecord.Kind
    let sender: DeviceAddress
    let messageID: UUID?
    let payload: Data
    /// Whole milliseconds (the API's precision), so that an entry handed to a stream as stored
    /// reads the same as when it is read back.
    let receivedAt: Date

    init(
        recipient: DeviceAddress, kind: MailboxRecord.Kind, sender: DeviceAddress, messageID: UUID?, payload: Data,
        receivedAt: Date
    ) {
        self.recipient = recipient
        self.kind = kind
        self.sender = sender
        self.messageID = messageID
        self.payload = payload
        self.receivedAt = receivedAt.wholeMilliseconds
    }

    /// What the row's payload column holds: nothing for a shared envelope, whose body is stored
    /// once (`SharedBodyTable`).
    var storedPayload: Data { kind == .sharedEnvelope ? Data() : payload }

    /// The entry as stored under `cursor`.
    func stored(at cursor: Int64) -> AddressedEntry {
        AddressedEntry(
            recipient: recipient,
            entry: MailboxEntry(
                cursor: cursor, kind: kind, sender: sender, messageID: messageID, payload: payload,
                receivedAt: receivedAt))
    }
}
