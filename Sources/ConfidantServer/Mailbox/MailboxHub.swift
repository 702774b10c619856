import ConfidantCrypto
import Foundation
import Synchronization

/// Hands new mailbox entries to the WebSocket connections of their devices on this instance.
///
/// Two kinds of news: `deliver` carries the stored rows themselves (SQLite, where the one writer
/// hands them over in commit order, see `RelayContext.write`), so a stream sends them without
/// reading them back; `wake` carries no data (PostgreSQL, where other instances write too), and
/// the stream reads its mailbox after the last cursor it sent. Either way a stream never sends a
/// cursor twice or skips one.
final class MailboxHub: Sendable {
    private let inboxes = Mutex<[DeviceAddress: [ObjectIdentifier: MailboxInbox]]>([:])

    /// An inbox for `caller`'s device that asks its stream to read what is stored at once, then
    /// fills as entries arrive.
    func subscribe(_ caller: Caller) -> MailboxInbox {
        let inbox = MailboxInbox(caller: caller)
        inboxes.withLock { $0[caller.address, default: [:]][ObjectIdentifier(inbox)] = inbox }
        return inbox
    }

    /// Ends the streams of the sessions `revocation` ended: their inboxes say `isRevoked`, so the
    /// streams stop taking requests and close.
    func revoke(_ revocation: Revocation) {
        let ended = inboxes.withLock { inboxes in
            var ended: [MailboxInbox] = []
            for (address, byInbox) in inboxes {
                let matching = byInbox.values.filter { revocation.covers($0.caller) }
                guard !matching.isEmpty else { continue }
                ended += matching
                for inbox in matching { inboxes[address]?.removeValue(forKey: ObjectIdentifier(inbox)) }
                if inboxes[address]?.isEmpty == true { inboxes[address] = nil }
            }
            return ended
        }
        for inbox in ended { inbox.revoke() }
    }

    func unsubscribe(_ inbox: MailboxInbox) {
        inboxes.withLock { inboxes in
            inboxes[inbox.address]?.removeValue(forKey: ObjectIdentifier(inbox))
            if inboxes[inbox.address]?.isEmpty == true { inboxes[inbox.address] = nil }
        }
        inbox.finish()
    }

    /// Rows just committed, in cursor order.
    func deliver(_ rows: [AddressedEntry]) {
        guard !rows.isEmpty else { return }
        let byAddress = Dictionary(grouping: rows, by: \.recipient)
        let targets = inboxes.withLock { inboxes in byAddress.keys.flatMap { inboxes[$0]?.values.map { $0 } ?? [] } }
        for inbox in targets { inbox.push(byAddress[inbox.address, default: []].map(\.entry)) }
    }

    func wake(_ addresses: some Sequence<DeviceAddress>) {
        let targets = inboxes.withLock { inboxes in addresses.flatMap { inboxes[$0]?.values.map { $0 } ?? [] } }
        for inbox in targets { inbox.wake() }
    }

    /// Wakes every local stream (after fan-out notifications may have been missed).
    func wakeEveryone() {
        for inbox in inboxes.withLock({ $0.values.flatMap(\.values) }) { inbox.wake() }
    }

    /// Ends every stream (server shutdown).
    func finishAll() {
        let all = inboxes.withLock { inboxes in
            defer { inboxes = [:] }
            return inboxes.values.flatMap(\.values)
        }
        for inbox in all { inbox.finish() }
    }
}

/// What one stream has yet to send: rows handed over, or "read the mailbox".
final class MailboxInbox: Sendable {
    enum Next {
        case entries([MailboxEntry])
        case read
    }

    /// Rows an inbox holds before it falls back to reading (a stream far behind its mailbox).
    static let capacity = 1000

    let caller: Caller
    var address: DeviceAddress { caller.address }
    /// Yields when there is something to take with `next()`; coalesces.
    let signals: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation
    private let state = Mutex<(rows: [MailboxEntry], mustRead: Bool)>(([], true))
    private let revoked = Atomic<Bool>(false)

    fileprivate init(caller: Caller) {
        self.caller = caller
        (signals, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        signal.yield()
    }

    fileprivate func push(_ rows: [MailboxEntry]) {
        state.withLock { state in
            guard !state.mustRead else { return }  // the coming read finds them
            if state.rows.count + rows.count > Self.capacity {
                state = ([], true)
            } else {
                state.rows += rows
            }
        }
        signal.yield()
    }

    fileprivate func wake() {
        state.withLock { $0 = ([], true) }
        signal.yield()
    }

    fileprivate func finish() { signal.finish() }

    fileprivate func revoke() {
        revoked.store(true, ordering: .releasing)
        signal.finish()
    }

    /// Whether the stream's session ended (signed out, device removed, account deleted): it must
    /// take no more requests and close.
    var isRevoked: Bool { revoked.load(ordering: .acquiring) }

    /// Takes what there is. After `.read` the stream reads everything after its last cursor;
    /// rows pushed meanwhile come with the next call and are skipped if the read had them.
    func next() -> Next {
        state.withLock { state in
            defer { state = ([], false) }
            return state.mustRead ? .read : .entries(state.rows)
        }
    }
}
