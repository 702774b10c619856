import ConfidantAPI
import ConfidantCrypto
import Foundation

extension MessageSender {
    /// Delivers the queued control messages (receipts, edits, deletions, timers), oldest first.
    /// - Returns: when to try again if one could not go now (the server is away): the rest wait with it.
    func deliverControls() async throws -> Date? {
        for control in try store.controls() {
            do {
                // A peer whose verified key changed gets nothing until the user confirms (a
                // message sent anyway accepts the new key); the control waits.
                if try directory.keysChangedSinceVerification(control.peer) { continue }
                let peerKeys = try await directory.keysForSending(of: control.peer)
                guard !peerKeys.isEmpty else {
                    try store.finishControl(control.messageID)
                    continue
                }
                let payload = try control.payload.serialized
                var groups = [(payload, peerKeys.map { SessionCipher.Recipient(user: control.peer, identity: $0) })]
                if control.toOwnDevices {
                    let own = try await directory.keysForSending(of: me).filter {
                        $0.deviceID != cipher.identity.deviceID
                    }
                    groups.append((payload, own.map { SessionCipher.Recipient(user: me, identity: $0) }))
                }
                try await transmit(try await seal(groups, messageID: control.messageID, sentAt: now()))
                try store.finishControl(control.messageID)
            } catch let error as ConfidantKitError where error.isTransient {
                lastUnreachable = error.description
                let next = retry.nextAttempt(after: control.attempts + 1, now: now())
                try store.deferControl(control.messageID, until: next, reason: error.description)
                return next
            } catch let error as ConfidantKitError {
                switch error {
                case .sessionExpired, .storeDamaged: throw error
                case .server(_, .deviceMismatch, _):
                    // Fetched again next time.
                    directory.devicesChanged(of: control.peer)
                    directory.devicesChanged(of: me)
                    continue
                default: try store.finishControl(control.messageID)  // refused for good: dropped
                }
            }
        }
        return nil
    }
}
