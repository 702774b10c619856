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
    /// One per device; a shared message's all carry the same bytes, stored once.
    let envelopes: [Envelope]
    /// A group envelope for every recipient (`SharedSendFrame`), stored once.
    let isShared: Bool
    /// The message this one must follow (a version 2 binary send frame): stored only if the
    /// relay holds that one from the same sender (`SendPlan`).
    let after: UUID?

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
            let header = try Self.header(of: bytes, index: index, maximumEnvelopeBytes: maximumEnvelopeBytes)
            try Self.check(header, index: index, sender: sender, messageID: messageID)
            guard header.recipient == recipient else {
                throw APIFailure(
                    .envelopeMismatch, "Envelope \(index) is sealed to another device than the one it is addressed to.")
            }
            envelopes.append(Envelope(recipient: recipient, bytes: bytes))
        }
        try self.init(sender: sender, messageID: messageID, envelopes: envelopes, after: nil, shared: false)
    }

    /// A binary send frame: each envelope goes to the device its header names, and the first
    /// header's message id is the message's.
    init(_ frame: StreamSendFrame, from sender: DeviceAddress, maximumEnvelopeBytes: Int) throws(APIFailure) {
        var messageID: UUID?
        var envelopes: [Envelope] = []
        for (index, bytes) in frame.envelopes.enumerated() {
            let header = try Self.header(of: bytes, index: index, maximumEnvelopeBytes: maximumEnvelopeBytes)
            let id = messageID ?? header.messageID
            messageID = id
            try Self.check(header, index: index, sender: sender, messageID: id)
            envelopes.append(Envelope(recipient: header.recipient, bytes: bytes))
        }
        guard let messageID else {
            throw APIFailure.malformed("A message has 1 to \(Self.maximumEnvelopes) envelopes.")
        }
        try self.init(sender: sender, messageID: messageID, envelopes: envelopes, after: frame.after, shared: false)
    }

    /// A shared send (a version 3 frame, over the stream or HTTP): one group envelope, whose
    /// header names the sender and the message, for every device the frame lists.
    init(_ frame: SharedSendFrame, from sender: DeviceAddress, maximumEnvelopeBytes: Int) throws(APIFailure) {
        guard frame.envelope.count <= maximumEnvelopeBytes else {
            throw APIFailure.tooLarge("The group envelope", limit: maximumEnvelopeBytes)
        }
        let envelope: GroupEnvelope
        do {
            envelope = try GroupEnvelope(serialized: frame.envelope)
        } catch {
            throw APIFailure(.invalidEnvelope, "The shared send does not carry a group envelope: \(error)")
        }
        guard envelope.sender == sender else {
            throw APIFailure(.senderMismatch, "The group envelope names another sender than the signed-in device.")
        }
        try self.init(
            sender: sender, messageID: envelope.messageID,
            envelopes: frame.recipients.map { Envelope(recipient: $0, bytes: frame.envelope) }, after: frame.after,
            shared: true)
    }

    private init(sender: DeviceAddress, messageID: UUID, envelopes: [Envelope], after: UUID?, shared: Bool)
        throws(APIFailure)
    {
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
        self.after = after
        isShared = shared
    }

    /// The server cannot read an envelope (v1 or v2), but it reads its header.
    private static func header(of bytes: Data, index: Int, maximumEnvelopeBytes: Int) throws(APIFailure)
        -> EnvelopeRoute
    {
        guard bytes.count <= maximumEnvelopeBytes else {
            throw APIFailure.tooLarge("Envelope \(index)", limit: maximumEnvelopeBytes)
        }
        do {
            return try EnvelopeRoute(serialized: bytes)
        } catch {
            throw APIFailure(.invalidEnvelope, "Envelope \(index) is not a sealed envelope: \(error)")
        }
    }

    /// Refuses an envelope whose header claims another sender or another message than the
    /// message it arrives in.
    private static func check(_ header: EnvelopeRoute, index: Int, sender: DeviceAddress, messageID: UUID)
        throws(APIFailure)
    {
        guard header.sender == sender else {
            throw APIFailure(.senderMismatch, "Envelope \(index) names another sender than the signed-in device.")
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
