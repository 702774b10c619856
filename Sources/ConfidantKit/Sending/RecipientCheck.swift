import ConfidantCrypto
import Foundation

/// Whether a queued message may go to its peer's devices now: the one place the outbox checks
/// a peer's keys against what the user verified, for a window of sends and for a message sent
/// alone alike.
enum RecipientCheck {
    /// To these devices, keys unchanged since verification (or never verified).
    case ready([PublicIdentity])
    /// To these devices (if there are any), once the keys that changed since verification are
    /// accepted: the user confirmed sending anyway.
    case acceptingChange([PublicIdentity])
    /// Not at all: the message fails with this.
    case refused(DeliveryFailure)

    /// The check for `message` to `peerKeys` (fetched by the caller, or fetched here: afresh
    /// with `refresh`). `changed`: whether the peer's keys changed since verification, when the
    /// caller knows already (a window reads it once per peer); returned with the check.
    static func check(
        _ queued: LocalStore.QueuedMessage, peerKeys fetched: [PublicIdentity]?, refresh: Bool = false,
        changed known: Bool? = nil, directory: KeyDirectory, store: LocalStore
    ) async throws -> (check: RecipientCheck, changed: Bool) {
        let peer = queued.message.peer
        let peerKeys: [PublicIdentity]
        if let fetched {
            peerKeys = fetched
        } else if refresh {
            peerKeys = try await directory.refreshKeys(of: peer)
        } else {
            peerKeys = try await directory.keysForSending(of: peer)
        }
        let changed = try known ?? directory.keysChangedSinceVerification(peer)
        if changed, !queued.confirmed {
            let name = try store.contact(id: peer)?.displayName ?? "the recipient"
            return (.refused(.keyChangedSinceVerification(name: name)), changed)
        }
        if changed { return (.acceptingChange(peerKeys), changed) }
        guard !peerKeys.isEmpty else { return (.refused(.noRecipientDevice), changed) }
        return (.ready(peerKeys), changed)
    }
}
