import ConfidantAPI
import ConfidantCrypto
import Foundation

/// Sends a group message with this device's sender key (docs/PROTOCOL.md §10.4): the chain is
/// made, or made anew when someone it went to is no longer a member; every member device that
/// lacks it gets it over the pairwise session first (stored on the relay before the message, so
/// it arrives first); then the message is sealed once and uploaded once for all of them
/// (`SharedSendFrame`).
struct GroupDelivery: Sendable {
    let store: LocalStore
    let directory: KeyDirectory
    let sealer: EnvelopeSealer
    let transport: BatchTransport
    let now: @Sendable () -> Date

    /// How a group message's delivery ended.
    enum Outcome {
        /// Stored on the relay for every member device, or there was no one to send it to.
        case sent
        /// Not worth sending: the group is gone from this device, or this account left it.
        case dropped
        /// The relay said the devices changed: fetched again, sent with the next delivery.
        case held
    }

    private var me: UUID { sealer.me }
    private var ownAddress: DeviceAddress { DeviceAddress(userID: me, deviceID: sealer.cipher.identity.deviceID) }

    func deliver(_ payload: ChatPayload, messageID: UUID) async throws -> Outcome {
        let group = payload.conversation
        guard let state = try store.groupLedger(group)?.state, state.members.contains(me) else { return .dropped }
        let members = state.members.filter { $0 != me }
        var devices: [(user: UUID, keys: [PublicIdentity])] = []
        for member in members {
            devices.append((member, try await directory.keysForSending(of: member)))
        }
        let own = try await directory.keysForSending(of: me).filter { $0.deviceID != ownAddress.deviceID }
        devices.append((me, own))
        devices.removeAll { $0.keys.isEmpty }
        guard !devices.isEmpty else { return .sent }
        do {
            let chain = try await chainGiven(to: devices, members: Set(state.members), group: group)
            let envelope = try seal(payload, with: chain, messageID: messageID)
            let recipients = devices.flatMap { user in
                user.keys.map { DeviceAddress(userID: user.user, deviceID: $0.deviceID) }
            }
            try await transport.transmitShared(
                try SharedSendFrame(recipients: recipients, envelope: envelope.serialized), messageID: messageID)
            return .sent
        } catch ConfidantKitError.server(_, .deviceMismatch, _) {
            for user in members + [me] { directory.devicesChanged(of: user) }
            return .held
        }
    }

    /// The group's sending chain, made anew when one of the users it went to has left, and
    /// given to each device among `devices` that lacks it.
    private func chainGiven(
        to devices: [(user: UUID, keys: [PublicIdentity])], members: Set<UUID>, group: UUID
    ) async throws -> SenderKeySendingChain {
        let (chain, shares) = try store.write { db in
            if let chain = try store.sendingChain(for: group, db), chain.iteration < UInt32.max - 1 {
                let shares = try store.chainShares(of: chain, db)
                if shares.allSatisfy({ members.contains($0.userID) }) { return (chain, shares) }
            }
            let fresh = SenderKeySendingChain(groupID: group)
            try store.saveSendingChain(fresh, db)
            return (fresh, Set<DeviceAddress>())
        }
        let distribution = try ChatPayload(conversation: group, content: .senderKey(chain.distribution)).serialized
        // Whole users (the relay takes a message to every current device of each user it names),
        // as many to one message as its 256 envelopes hold.
        var batch: [PayloadGroup] = []
        var batchDevices = 0
        func flush() async throws {
            guard !batch.isEmpty else { return }
            let sealed = try await sealer.seal(batch, messageID: UUID.timeOrdered(at: now()), sentAt: now())
            try await transport.transmit(sealed)
            try store.recordShares(of: chain, with: batch.flatMap { $0.recipients.map(\.address) })
            batch = []
            batchDevices = 0
        }
        for (user, keys) in devices
        where keys.contains(where: { !shares.contains(DeviceAddress(userID: user, deviceID: $0.deviceID)) }) {
            if batchDevices + keys.count > StreamSendFrame.maximumEnvelopes { try await flush() }
            batch.append(
                PayloadGroup(payload: distribution, recipients: keys.map { .init(user: user, identity: $0) }))
            batchDevices += keys.count
        }
        try await flush()
        return chain
    }

    /// The message sealed with the chain's next key, the chain stored stepped in the same
    /// transaction (no key seals twice).
    private func seal(_ payload: ChatPayload, with given: SenderKeySendingChain, messageID: UUID) throws
        -> GroupEnvelope
    {
        let bytes = try payload.serialized
        return try store.write { db in
            // As stored now (another process on the profile may have sealed with it meanwhile).
            var chain =
                try store.sendingChain(for: given.groupID, db).flatMap { $0.chainID == given.chainID ? $0 : nil }
                ?? given
            let envelope = try GroupEnvelope.seal(
                bytes, chain: &chain, sender: ownAddress, messageID: messageID, timestamp: now())
            try store.saveSendingChain(chain, db)
            return envelope
        }
    }
}
