import ConfidantAPI
import ConfidantCrypto
import Foundation

/// One payload and the devices it is sealed for.
struct PayloadGroup {
    let payload: Data
    let recipients: [SessionCipher.Recipient]
}

/// A message ready to seal without anything from the network: its payloads and their devices.
struct PlainMessage {
    let id: UUID
    let sentAt: Date
    let groups: [PayloadGroup]
}

/// The one way messages are sealed: each payload for its devices, in a store transaction that
/// stores the sessions it moves on before anything leaves (so a message key is never used twice).
/// Such a transaction commits as `LocalStore.sealing` says: without waiting for the disk unless
/// it reserves message numbers (docs/PROTOCOL.md §9.6).
struct EnvelopeSealer: Sendable {
    let relay: RelayClient
    let store: LocalStore
    let directory: KeyDirectory
    let cipher: SessionCipher

    var me: UUID { cipher.userID }

    /// What goes to whom: `forPeer` to each of the peer's devices, and `forOwn` to each of this
    /// account's other devices (the relay takes a message only if it reaches them), as fetched for
    /// sending (or fetched afresh with `refreshingOwn`, after the relay said the devices changed).
    func groups(
        peer: UUID, peerKeys: [PublicIdentity], forPeer: Data, forOwn: Data, refreshingOwn: Bool = false
    ) async throws -> [PayloadGroup] {
        let ownKeys = try await (refreshingOwn ? directory.refreshKeys(of: me) : directory.keysForSending(of: me))
            .filter { $0.deviceID != cipher.identity.deviceID }
        return [
            PayloadGroup(payload: forPeer, recipients: peerKeys.map { .init(user: peer, identity: $0) }),
            PayloadGroup(payload: forOwn, recipients: ownKeys.map { .init(user: me, identity: $0) }),
        ]
    }

    /// Seals a message for its devices. A device without a session gets a prekey bundle claimed
    /// first, outside the transaction (no I/O inside one), and the transaction starts again; with
    /// sessions for all, as for nearly every message, it is one transaction.
    func seal(_ groups: [PayloadGroup], messageID: UUID, sentAt: Date) async throws -> Components.Schemas.MessageBatch {
        let recipients = groups.flatMap(\.recipients)
        enum Outcome {
            case sealed([Data])
            case needing([SessionCipher.Recipient])
        }
        var bundles: [DeviceAddress: SessionCipher.Bundle] = [:]
        var envelopes: [Data] = []
        do {
            // A session can end between two rounds (a key change seen meanwhile): a third round
            // seals with what it has, and a device still without a bundle fails the attempt.
            rounds: for round in 0..<3 {
                let outcome = try store.transaction(store.sealing) { transaction -> Outcome in
                    let needing = try recipients.filter {
                        try bundles[$0.address] == nil && cipher.needsBundle($0, sessions: transaction)
                    }
                    guard needing.isEmpty || round == 2 else { return .needing(needing) }
                    return .sealed(
                        try sealedEnvelopes(groups, messageID: messageID, sentAt: sentAt, bundles: bundles, transaction)
                    )
                }
                switch outcome {
                case .sealed(let sealed):
                    envelopes = sealed
                    break rounds
                case .needing(let needing):
                    for recipient in needing {
                        bundles[recipient.address] = try await claimBundle(of: recipient.address)
                    }
                }
            }
        } catch SessionCipher.SealError.untrustedBundle(let device, let reason) {
            let name =
                device.userID == me
                ? "your other device" : (try store.contact(id: device.userID)?.displayName ?? "the recipient")
            throw ConfidantKitError.untrustedPrekeys(name: name, reason: reason)
        }
        return Self.batch(messageID, recipients: recipients, envelopes: envelopes)
    }

    /// Messages sealed in one store transaction, in order, up to the first that needs anything
    /// else (a device without a session needs a prekey bundle, which ``seal(_:messageID:sentAt:)``
    /// claims) or fails: the batches of those before it.
    func sealTogether(_ messages: [PlainMessage]) -> [Components.Schemas.MessageBatch] {
        guard !messages.isEmpty else { return [] }
        return
            (try? store.transaction(store.sealing) { transaction -> [Components.Schemas.MessageBatch] in
                var batches: [Components.Schemas.MessageBatch] = []
                for message in messages {
                    guard let batch = try sealedAlone(message, transaction) else { break }
                    batches.append(batch)
                }
                return batches
            }) ?? []
    }

    /// A new message stored, queued and sealed in one store transaction, for an outbox that held
    /// nothing before it (`LocalStore.queueSealed`): nil, with nothing written, when any of its
    /// devices has no session or anything else fails, for the usual path to meet and report.
    /// ``SendingContexts/Stale`` is thrown, and nothing written, when `context` changed since it
    /// was read.
    func queueSealed(
        _ message: LocalStore.NewMessage, groups: [PayloadGroup], confirmed: Bool, builtOn context: SendingContext?
    ) throws -> (message: ChatMessage, batch: Components.Schemas.MessageBatch, commit: UInt64)? {
        let plain = PlainMessage(id: message.id, sentAt: message.sentAt, groups: groups)
        do {
            guard
                let queued = try store.queueSealed(
                    message, confirmed: confirmed, builtOn: context, now: message.sentAt,
                    seal: { transaction in try sealedAlone(plain, transaction) })
            else { return nil }
            return (queued.message, queued.sealed, queued.commit)
        } catch let stale as SendingContexts.Stale {
            throw stale
        } catch {
            return nil
        }
    }

    /// The message's batch sealed in `transaction`, nil if a device of it has no session yet.
    private func sealedAlone(_ message: PlainMessage, _ transaction: StoreTransaction) throws
        -> Components.Schemas.MessageBatch?
    {
        let recipients = message.groups.flatMap(\.recipients)
        guard try !recipients.contains(where: { try cipher.needsBundle($0, sessions: transaction) }) else {
            return nil
        }
        let envelopes = try sealedEnvelopes(
            message.groups, messageID: message.id, sentAt: message.sentAt, bundles: [:], transaction)
        return Self.batch(message.id, recipients: recipients, envelopes: envelopes)
    }

    /// Each payload sealed for its devices, in order, in `transaction`.
    private func sealedEnvelopes(
        _ groups: [PayloadGroup], messageID: UUID, sentAt: Date, bundles: [DeviceAddress: SessionCipher.Bundle],
        _ transaction: StoreTransaction
    ) throws -> [Data] {
        try groups.flatMap { group in
            try cipher.seal(
                group.payload, messageID: messageID, sentAt: sentAt, for: group.recipients, bundles: bundles,
                sessions: transaction)
        }
    }

    static func batch(_ messageID: UUID, recipients: [SessionCipher.Recipient], envelopes: [Data])
        -> Components.Schemas.MessageBatch
    {
        Components.Schemas.MessageBatch(
            messageId: messageID.canonicalString,
            envelopes: zip(recipients, envelopes).map {
                .init(
                    recipientUserId: $0.user.canonicalString, recipientDeviceId: $0.identity.deviceID.canonicalString,
                    envelope: .init($1))
            })
    }

    private func claimBundle(of device: DeviceAddress) async throws -> SessionCipher.Bundle {
        let bundles: [Components.Schemas.PrekeyBundle]
        switch try await relay.call({
            try await $0.claimPrekeyBundles(
                path: .init(userId: device.userID.canonicalString),
                query: .init(deviceId: device.deviceID.canonicalString))
        }) {
        case .ok(let ok): bundles = try ok.body.json
        case .default(let status, let response): throw problem(status, response)
        }
        guard let wire = bundles.first(where: { UUID(uuidString: $0.deviceId) == device.deviceID }) else {
            return .noPrekeys
        }
        guard let bundle = PrekeyBundle(wire) else {
            throw ConfidantKitError.untrustedPrekeys(
                name: device.description, reason: "the bundle's key ids are out of range")
        }
        return .prekeys(bundle)
    }
}
