import ConfidantAPI
import ConfidantCrypto
import Foundation

/// A message as the mailbox takes it: one envelope per recipient device, after the checks every
/// send gets (over HTTP or the stream): sizes, headers naming this sender, recipient and message,
/// no device twice, not to the sending device itself.
struct MailboxSubmission: Sendable {
    struct Envelope: Sendable {
        let recipient: DeviceAddress
        let bytes: Data
    }

    static let maximumEnvelopes = 256

    let sender: DeviceAddress
    let messageID: UUID
    let envelopes: [Envelope]

    init(_ batch: Components.Schemas.MessageBatch, from sender: DeviceAddress, maximumEnvelopeBytes: Int)
        throws(APIFailure)
    {
        let messageID = try RelayAPI.uuid(batch.messageId, "messageId")
        guard (1...Self.maximumEnvelopes).contains(batch.envelopes.count) else {
            throw APIFailure.malformed("A message has 1 to \(Self.maximumEnvelopes) envelopes.")
        }
        var envelopes: [Envelope] = []
        for (index, item) in batch.envelopes.enumerated() {
            let recipient = DeviceAddress(
                userID: try RelayAPI.uuid(item.recipientUserId, "recipientUserId"),
                deviceID: try RelayAPI.uuid(item.recipientDeviceId, "recipientDeviceId"))
            let bytes = Data(item.envelope.data)
            guard bytes.count <= maximumEnvelopeBytes else {
                throw APIFailure.tooLarge("Envelope \(index)", limit: maximumEnvelopeBytes)
            }
            try Self.checkHeader(bytes, index: index, sender: sender, recipient: recipient, messageID: messageID)
            envelopes.append(Envelope(recipient: recipient, bytes: bytes))
        }
        let recipients = envelopes.map(\.recipient)
        guard Set(recipients).count == recipients.count else {
            throw APIFailure.malformed("Two envelopes go to the same device.")
        }
        guard !recipients.contains(sender) else {
            throw APIFailure.malformed("Do not seal to the sending device itself; it keeps its own copy.")
        }
        self.sender = sender
        self.messageID = messageID
        self.envelopes = envelopes
    }

    /// The server cannot read an envelope (v1 or v2), but it can refuse one whose header claims
    /// another sender, another recipient or another message than the batch it arrives in.
    private static func checkHeader(
        _ bytes: Data, index: Int, sender: DeviceAddress, recipient: DeviceAddress,
        messageID: UUID
    ) throws(APIFailure) {
        let header: WireEnvelope
        do {
            header = try WireEnvelope(serialized: bytes)
        } catch {
            throw APIFailure(.invalidEnvelope, "Envelope \(index) is not a sealed envelope: \(error)")
        }
        guard header.sender == sender else {
            throw APIFailure(.senderMismatch, "Envelope \(index) names another sender than the signed-in device.")
        }
        guard header.recipient == recipient else {
            throw APIFailure(
                .envelopeMismatch, "Envelope \(index) is sealed to another device than the one it is addressed to.")
        }
        guard header.messageID == messageID else {
            throw APIFailure(.envelopeMismatch, "Envelope \(index) carries another message id than the batch.")
        }
    }
}

/// What storing a message came to.
struct MailboxReceipt: Sendable {
    /// How many envelopes the message has (now or when it was first stored).
    let stored: Int
    /// The message id was stored before: nothing was stored now.
    let duplicate: Bool
    let receivedAt: Date

    func wire(messageID: String) -> Components.Schemas.MessageReceipt {
        .init(messageId: messageID, stored: stored, duplicate: duplicate, receivedAt: receivedAt)
    }
}
