import ConfidantAPI
import ConfidantCrypto
import Fluent
import Foundation
import NIOCore

/// The devices' mailboxes: writing (sends and acknowledgements through one group-committing
/// writer, notices inside other services' transactions), publishing what was written to the
/// devices' live streams, and reading. Used alike by the HTTP handlers and the stream.
final class MailboxService: Sendable {
    /// Acknowledgements take at most this many cursors at a time.
    static let maximumAcknowledgement = 1000
    /// Mailbox pages hold at most this many entries.
    static let maximumPage = 500

    let publisher: MailboxPublisher
    private let writer: MailboxWriter
    private let sendRate: TokenBuckets
    private let retention: TimeInterval
    private let now: @Sendable () -> Date

    init(database: RelayDatabase, hub: MailboxHub, limits: Limits, now: @escaping @Sendable () -> Date) {
        publisher = MailboxPublisher(database: database, hub: hub)
        writer = MailboxWriter(publisher: publisher, mailboxLimit: limits.mailboxLimit, now: now)
        sendRate = TokenBuckets(setting: limits.sendRate, now: now)
        retention = limits.retention
        self.now = now
    }

    /// What bounds the mailboxes.
    struct Limits: Sendable {
        /// Unacknowledged entries per device.
        var mailboxLimit: Int
        /// Messages per sending account.
        var sendRate: TokenBucketSetting
        /// How long an unacknowledged entry is kept.
        var retention: TimeInterval
    }

    var hub: MailboxHub { publisher.hub }
    private var db: any Database { publisher.database.db }

    // MARK: Writing

    /// Counts a message against its sender's rate; `rate_limited` when it is over.
    func admit(_ submission: MailboxSubmission) throws(APIFailure) {
        try sendRate.take(for: submission.sender.userID, what: "messages")
    }

    /// Stores a message (or answers it as a duplicate) once its group has committed.
    func send(_ submission: MailboxSubmission) async throws -> MailboxReceipt {
        try admit(submission)
        return try await withCheckedThrowingContinuation { continuation in
            writer.enqueue(.send(submission, replyOn: nil, reply: { continuation.resume(with: $0) }))
        }
    }

    /// Queues a message behind the ones this caller queued before, without waiting; `reply` runs
    /// on `eventLoop` once its group has committed.
    func enqueueSend(
        _ submission: MailboxSubmission, replyingOn eventLoop: any EventLoop,
        reply: @escaping @Sendable (Result<MailboxReceipt, any Error>) -> Void
    ) {
        writer.enqueue(.send(submission, replyOn: eventLoop, reply: reply))
    }

    /// Deletes the device's own entries among `cursors` (anyone else's are left alone); answers
    /// how many it deleted.
    func acknowledge(_ cursors: [Int64], for address: DeviceAddress) async throws -> Int {
        guard try Self.checkAcknowledgement(cursors) else { return 0 }
        return try await withCheckedThrowingContinuation { continuation in
            writer.enqueue(.acknowledge(cursors, for: address, on: nil, reply: { continuation.resume(with: $0) }))
        }
    }

    /// `acknowledge` without waiting for the commit, from a stream on `eventLoop`; `failed` hears
    /// of a failure.
    func enqueueAcknowledgement(
        _ cursors: [Int64], for address: DeviceAddress, on eventLoop: any EventLoop,
        failed: @escaping @Sendable (any Error) -> Void
    ) throws(APIFailure) {
        guard try Self.checkAcknowledgement(cursors) else { return }
        writer.enqueue(
            .acknowledge(
                cursors, for: address, on: eventLoop, reply: { if case .failure(let error) = $0 { failed(error) } }))
    }

    /// Whether there is anything to acknowledge; too many cursors at once are refused.
    private static func checkAcknowledgement(_ cursors: [Int64]) throws(APIFailure) -> Bool {
        guard cursors.count <= maximumAcknowledgement else {
            throw APIFailure.malformed("Acknowledge at most \(maximumAcknowledgement) cursors at a time.")
        }
        return !cursors.isEmpty
    }

    /// Runs `body` in one write transaction; entries it stores with `store` reach the devices'
    /// streams once it commits.
    func write<T: Sendable>(_ body: @escaping @Sendable (any Database, MailboxPublication) async throws -> T)
        async throws -> T
    {
        try await publisher.write(body)
    }

    /// Within `write`: stores notices or envelopes for their devices.
    func store(_ entries: [NewMailboxEntry], in db: any Database, publishing publication: MailboxPublication)
        async throws
    {
        try await publisher.store(entries, in: db, publishing: publication)
    }

    /// Deletes unacknowledged entries older than the retention; returns how many.
    @discardableResult
    func purgeExpired() async throws -> Int {
        let cutoff = now().addingTimeInterval(-retention)
        return try await publisher.database.write { db in
            try await MailboxTable.deleteReceived(before: cutoff, on: db)
        }
    }

    // MARK: Reading

    /// Up to `limit` entries of the device after `after`, oldest first, and whether more follow.
    func page(of address: DeviceAddress, after: Int64, limit: Int) async throws -> (
        entries: [MailboxEntry], hasMore: Bool
    ) {
        let limit = min(max(limit, 1), Self.maximumPage)
        let entries = try await MailboxTable.page(of: address, after: max(after, 0), limit: limit + 1, on: db)
        return (Array(entries.prefix(limit)), entries.count > limit)
    }

    /// The owner's conversations, most recent first, with each peer and how many of the peer's
    /// messages wait unacknowledged in this device's mailbox.
    func recentConversations(of caller: DeviceAddress, limit: Int = 200) async throws -> [(
        peer: UserRecord, lastActivity: Date, unread: Int
    )] {
        let conversations = try await ConversationRecord.query(on: db).filter(\.$ownerID == caller.userID)
            .sort(\.$lastActivity, .descending).limit(limit).all()
        let peers = try await UserRecord.query(on: db).filter(\.$id ~~ conversations.map(\.peerID)).all()
        let byID = Dictionary(
            peers.compactMap { user in user.id.map { ($0, user) } }, uniquingKeysWith: { first, _ in first })
        let unread = try await MailboxTable.unreadMessages(for: caller, on: db)
        return conversations.compactMap { conversation in
            byID[conversation.peerID].map {
                (peer: $0, lastActivity: conversation.lastActivity, unread: unread[conversation.peerID] ?? 0)
            }
        }
    }
}

extension MailboxEntry {
    /// The entry as the API shows it.
    var wire: Components.Schemas.MailboxEntry {
        get throws {
            let user = sender.userID.canonicalString
            let device = sender.deviceID.canonicalString
            switch kind {
            case .envelope, .sharedEnvelope:
                return .init(
                    cursor: cursor, kind: .envelope, senderUserId: user, senderDeviceId: device,
                    messageId: messageID?.canonicalString, receivedAt: receivedAt, envelope: .init(payload))
            case .keyChange:
                let notice = try StreamCoding.decoder().decode(Components.Schemas.KeyChange.self, from: payload)
                return .init(
                    cursor: cursor, kind: .keyChange, senderUserId: user, senderDeviceId: device,
                    receivedAt: receivedAt,
                    keyChange: notice)
            case .prekeysLow:
                let status = try StreamCoding.decoder().decode(Components.Schemas.PrekeyStatus.self, from: payload)
                return .init(
                    cursor: cursor, kind: .prekeysLow, senderUserId: user, senderDeviceId: device,
                    receivedAt: receivedAt,
                    prekeys: status)
            }
        }
    }
}
