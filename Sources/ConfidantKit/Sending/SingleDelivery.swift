import ConfidantAPI
import ConfidantCrypto
import Foundation

/// One queued message delivered alone, over the stream or HTTP (`BatchTransport`), with every
/// case a window of sends leaves to it: a key change the user confirmed, a peer without devices,
/// devices without a session (a prekey bundle claimed), a `device_mismatch` (the devices fetched
/// again once), a refusal, and a server that cannot take it now. Runs on the outbox's actor.
struct SingleDelivery: Sendable {
    let store: LocalStore
    let directory: KeyDirectory
    let sealer: EnvelopeSealer
    let payloads: OutgoingPayloads
    let transport: BatchTransport

    /// - Parameter peerKeys: the peer's devices as just fetched, if they were; fetched otherwise
    ///   (and again after a `device_mismatch`).
    func deliver(_ queued: LocalStore.QueuedMessage, peerKeys fetched: [PublicIdentity]?, drain: isolated OutboxDrain)
        async throws -> OutboxDrain.Delivery
    {
        let message = queued.message
        do {
            var fetched = fetched
            for attempt in 0..<2 {
                if attempt == 0, let batch = drain.presealed.removeValue(forKey: message.id) {
                    // Sealed as it was queued, for keys checked then.
                    fetched = nil
                    do {
                        try await transport.transmit(batch)
                        return try drain.finish(message.id, .sent)
                    } catch ConfidantKitError.server(_, .deviceMismatch, _) {
                        continue  // fetched afresh and sealed again below
                    }
                }
                let (check, _) = try await RecipientCheck.check(
                    queued, peerKeys: fetched, refresh: attempt > 0, directory: directory, store: store)
                fetched = nil
                let peerKeys: [PublicIdentity]
                switch check {
                case .ready(let keys): peerKeys = keys
                case .acceptingChange(let keys):
                    try directory.acceptChangedKeys(of: message.peer)
                    guard !keys.isEmpty else { return try drain.finish(message.id, .failed(.noRecipientDevice)) }
                    peerKeys = keys
                case .refused(let failure): return try drain.finish(message.id, .failed(failure))
                }
                let (forPeer, forOwn) = try await payloads.payloads(
                    of: message, hasAttachments: queued.hasAttachments, progress: drain.progress(of: message.id))
                let groups = try await sealer.groups(
                    peer: message.peer, peerKeys: peerKeys, forPeer: forPeer, forOwn: forOwn, refreshingOwn: attempt > 0
                )
                let batch = try await sealer.seal(groups, messageID: message.id, sentAt: message.sentAt)
                do {
                    try await transport.transmit(batch)
                    return try drain.finish(message.id, .sent)
                } catch ConfidantKitError.server(_, .deviceMismatch, _) where attempt == 0 {
                    // A device appeared or went between fetching keys and sending: fetch again once.
                    continue
                }
            }
            return try drain.finish(message.id, .failed(.devicesKeptChanging))
        } catch let error as ConfidantKitError where error.isTransient {
            return .waiting(error.description, next: drain.nextAttempt(after: queued.attempts))
        } catch let error as ConfidantKitError {
            switch error {
            case .sessionExpired, .untrustedPrekeys, .storeDamaged: throw error
            default: return try drain.finish(message.id, .failed(DeliveryFailure(error)))
            }
        }
    }
}
