import Foundation
import Synchronization

/// The chats on screen now (each `ChatViewModel` while it runs), and whether this profile sends
/// read receipts. A message that arrives in an open chat is stored as read, in the transaction
/// that stores it, and the receipt its sender gets is a read receipt instead of a delivery
/// receipt (read implies delivered). Before, the chat marked each arrival read in a write of its
/// own after the store's change reached it, and the sender got two receipts for it — two more
/// sealed envelopes, commits and Double Ratchet steps on each side for every message.
final class OpenChats: Sendable {
    private struct State {
        /// Screens open per peer (two windows may show one chat).
        var open: [UUID: Int] = [:]
        var sendsReadReceipts: Bool
    }

    private let state: Mutex<State>

    init(sendsReadReceipts: Bool) {
        state = Mutex(State(sendsReadReceipts: sendsReadReceipts))
    }

    func opened(_ peer: UUID) {
        state.withLock { $0.open[peer, default: 0] += 1 }
    }

    func closed(_ peer: UUID) {
        state.withLock { state in
            guard let count = state.open[peer] else { return }
            state.open[peer] = count > 1 ? count - 1 : nil
        }
    }

    func setSendsReadReceipts(_ enabled: Bool) {
        state.withLock { $0.sendsReadReceipts = enabled }
    }

    /// The peers whose chats are open, and whether a read receipt may tell them so.
    var now: (peers: Set<UUID>, sendsReadReceipts: Bool) {
        state.withLock { (Set($0.open.keys), $0.sendsReadReceipts) }
    }
}
