import ConfidantAPI
import ConfidantCrypto
import Foundation

/// Delivers the queued control messages (receipts, edits, deletions, timers), oldest first.
/// Receipts of one kind queued one after another for the same peer go as one envelope
/// (`ControlRun`): while one is sealed and sent, the messages that arrive meanwhile queue theirs,
/// and the next delivery takes them together, as a group commit does.
struct ControlDelivery: Sendable {
    let store: LocalStore
    let directory: KeyDirectory
    let sealer: EnvelopeSealer
    let transport: BatchTransport
    let retry: RetryPolicy
    let now: @Sendable () -> Date

    /// - Returns: when to try again, and why, if one could not go now (the server is away): the
    ///   rest wait with it.
    func deliver() async throws -> (next: Date, reason: String)? {
        guard store.takeControlsMark() else { return nil }
        // Anything that leaves a control queued (held, deferred, an error) sets the mark again.
        var leftQueued = true
        defer { if leftQueued { store.controlsMayWait() } }
        var held = false
        for run in ControlRun.runs(of: try store.controls()) {
            let control = run.first
            do {
                // A message, edit or deletion queued under its group goes with the group's sender key.
                if let messageID = try groupMessageID(of: control) {
                    let group = GroupDelivery(
                        store: store, directory: directory, sealer: sealer, transport: transport, now: now)
                    switch try await group.deliver(control.payload, messageID: messageID) {
                    case .sent, .dropped: try store.finishControls(run.messageIDs)
                    case .held: held = true
                    }
                    continue
                }
                // A peer whose verified key changed gets nothing until the user confirms (a
                // message sent anyway accepts the new key); the control waits.
                if try directory.keysChangedSinceVerification(control.peer) {
                    held = true
                    continue
                }
                let peerKeys = try await directory.keysForSending(of: control.peer)
                guard !peerKeys.isEmpty else {
                    try store.finishControls(run.messageIDs)
                    continue
                }
                let payload = try run.payload.serialized
                // The relay takes a message only if it also reaches the sender's other devices.
                let groups = try await sealer.groups(
                    peer: control.peer, peerKeys: peerKeys, forPeer: payload, forOwn: payload)
                try await transport.transmit(try await sealer.seal(groups, messageID: run.messageID, sentAt: now()))
                try store.finishControls(run.messageIDs)
            } catch let error as ConfidantKitError where error.isTransient {
                let next = retry.nextAttempt(after: control.attempts + 1, now: now())
                try store.deferControl(control.messageID, until: next, reason: error.description)
                return (next, error.description)
            } catch let error as ConfidantKitError {
                switch error {
                case .sessionExpired, .storeDamaged: throw error
                case .server(_, .deviceMismatch, _):
                    // Fetched again next time.
                    directory.devicesChanged(of: control.peer)
                    directory.devicesChanged(of: sealer.me)
                    held = true
                    continue
                default: try store.finishControls(run.messageIDs)  // refused for good: dropped
                }
            }
        }
        leftQueued = held
        return nil
    }

    /// The envelope's message id when `control` goes to its group with the sender key: a group
    /// message's own id, an edit's or deletion's control id; nil for anything else.
    private func groupMessageID(of control: LocalStore.QueuedControl) throws -> UUID? {
        guard control.peer == control.payload.conversation else { return nil }
        switch control.payload.content {
        case .groupMessage(let id, _, _): return id
        case .edit, .deletion, .reaction: return try store.holdsGroup(control.peer) ? control.messageID : nil
        default: return nil
        }
    }
}
