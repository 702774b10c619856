import ConfidantCrypto
import Foundation
import Synchronization

/// Hands new mailbox entries to the WebSocket connections of their devices on this instance.
///
/// Two kinds of news: `deliver` carries the stored rows themselves, so a stream sends them without
/// reading them back (SQLite, where the one writer hands them over in commit order, see
/// `RelayContext.write`; PostgreSQL, to the streams that had everything before them,
/// `MailboxHandOver`); `wake` carries no data (PostgreSQL: the other instances' writes, and
/// streams that were behind), and the stream reads its mailbox after the last cursor it sent.
/// Either way a stream never sends a cursor twice or skips one.
final class MailboxHub: Sendable {
    private let inboxes = Mutex<[DeviceAddress: [ObjectIdentifier: MailboxInbox]]>([:])
    /// Proven streams one device may have on an instance (its profile open in a few processes at
    /// once); a newer one supersedes the oldest (4409). Each holds buffers of up to ~18 MiB.
    static let maximumStreamsPerDevice = 4
    /// The order streams were proven in, to find a device's oldest.
    private let provenCount = Atomic<UInt64>(0)
    /// Tasks the streams of this instance are running (`StreamSession`): none while every stream
    /// is idle. For the tests, which check that an idle stream holds no task.
    let streamTasks = Atomic<Int>(0)
    /// Names this instance in the wake-ups it sends the others (`MailboxWakeNotice`), so that it
    /// knows its own when they come back.
    let instance = UUID()
    /// Entries this instance stored (every commit hands its rows here), for the metrics.
    private let stored = Atomic<UInt64>(0)
    var storedEntries: UInt64 { stored.load(ordering: .relaxed) }

    /// An inbox for `caller`'s device that asks its stream to read what is stored after `after`
    /// at once, then fills as entries arrive.
    func subscribe(_ caller: Caller, after: Int64 = 0) -> MailboxInbox {
        let inbox = MailboxInbox(caller: caller, after: after)
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

    /// `inbox`'s stream proved its device's key: it counts towards the device's streams, and the
    /// oldest of them makes way past ``maximumStreamsPerDevice``.
    func proven(_ inbox: MailboxInbox) {
        inbox.markProven(provenCount.add(1, ordering: .relaxed).newValue)
        let superseded = inboxes.withLock { inboxes -> [MailboxInbox] in
            let proven = (inboxes[inbox.address] ?? [:]).values.filter { $0.provenOrder != nil }
                .sorted { ($0.provenOrder ?? 0) < ($1.provenOrder ?? 0) }
            let extra = proven.prefix(max(0, proven.count - Self.maximumStreamsPerDevice))
            for old in extra { inboxes[inbox.address]?.removeValue(forKey: ObjectIdentifier(old)) }
            return Array(extra)
        }
        for old in superseded { old.supersede() }
    }

    func unsubscribe(_ inbox: MailboxInbox) {
        inboxes.withLock { inboxes in
            inboxes[inbox.address]?.removeValue(forKey: ObjectIdentifier(inbox))
            if inboxes[inbox.address]?.isEmpty == true { inboxes[inbox.address] = nil }
        }
        inbox.finish()
    }

    /// Rows just committed, in cursor order. `following` (PostgreSQL): for each device, the
    /// greatest cursor its mailbox held before its rows; a stream that has not sent that far reads
    /// instead (`MailboxHandOver`). Devices not in it (SQLite) take their rows as they come.
    func deliver(_ rows: [AddressedEntry], following: [DeviceAddress: Int64] = [:]) {
        guard !rows.isEmpty else { return }
        stored.add(UInt64(rows.count), ordering: .relaxed)
        let byAddress = Dictionary(grouping: rows, by: \.recipient)
        let targets = inboxes.withLock { inboxes in byAddress.keys.flatMap { inboxes[$0]?.values.map { $0 } ?? [] } }
        for inbox in targets {
            inbox.push(byAddress[inbox.address, default: []].map(\.entry), following: following[inbox.address])
        }
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

/// What one stream has yet to send: rows handed over, or "read the mailbox"; or, while the stream
/// is caught up and has nothing left to send, nothing, because new rows go out at once. It tells
/// its stream when there is something to take (`Notice.ready`) and when it ended
/// (`Notice.finished`: unsubscribed, revoked, the server shutting down).
final class MailboxInbox: Sendable {
    enum Next {
        case entries([MailboxEntry])
        case read
    }

    enum Notice: Sendable {
        /// `next()` has something: rows, or a read to do.
        case ready
        /// Nothing more will come; once revoked the stream must close (4401).
        case finished
    }

    /// Sends rows to the stream's client at once, in the order given; false when it cannot take
    /// them now (too much is unwritten), and nothing was sent.
    typealias LiveSend = @Sendable ([MailboxEntry]) -> Bool

    /// Rows an inbox holds before it falls back to reading (a stream far behind its mailbox).
    static let capacity = 1000

    private struct State {
        var rows: [MailboxEntry] = []
        var mustRead = true
        /// Set while the stream is idle and caught up (`goLive`).
        var live: LiveSend?
        /// The highest cursor sent to the client, by the stream or live.
        var sentThrough: Int64

        /// Drops what waits and stops live sending: the stream reads its mailbox next.
        mutating func readInstead() {
            rows = []
            mustRead = true
            live = nil
        }
    }

    let caller: Caller
    var address: DeviceAddress { caller.address }
    private let state: Mutex<State>
    private let revoked = Atomic<Bool>(false)
    private let superseded = Atomic<Bool>(false)
    /// When the stream was proven, in the hub's order; nil before.
    private let proof = Mutex<UInt64?>(nil)
    /// Who hears the notices, and whether the inbox finished.
    private let listener = Mutex(Listener())

    /// A struct, not a tuple: `Mutex` is generic, so a closure in a tuple (or an optional) it
    /// holds is stored at the generic abstraction, and every `withLock` converted it to the
    /// concrete one and back, wrapping it in two more reabstraction thunks each time, so that a
    /// long-lived stream's handler would grow until it overflowed its thread's stack. A struct's
    /// stored closure keeps one abstraction.
    private struct Listener {
        var handler: (@Sendable (Notice) -> Void)?
        var finished = false
    }

    /// A new inbox has a read to do (`next()` says `.read`) before anything is pushed to it.
    fileprivate init(caller: Caller, after: Int64) {
        self.caller = caller
        state = Mutex(State(sentThrough: after))
    }

    /// Sets who hears the notices (called outside the inbox's locks, from the thread that caused
    /// them); `.finished` comes at once if the inbox finished already.
    func notify(_ handler: @escaping @Sendable (Notice) -> Void) {
        let finished = listener.withLock { listener in
            listener.handler = handler
            return listener.finished
        }
        if finished { handler(.finished) }
    }

    private func signal() {
        listener.withLock { $0.handler }?(.ready)
    }

    /// `following`: the greatest cursor the device had before `rows` (`MailboxHandOver`); when the
    /// stream has neither sent nor holds that one, entries in between may not have reached it
    /// (another instance's, or another transaction's not handed over yet), and it reads instead.
    fileprivate func push(_ rows: [MailboxEntry], following: Int64? = nil) {
        let signalled = state.withLock { state -> Bool in
            guard !state.mustRead else { return false }  // the coming read finds them
            if let following, following > max(state.sentThrough, state.rows.last?.cursor ?? 0) {
                state.readInstead()
                return true
            }
            if let live = state.live {
                // Sent under the lock, so that rows pushed next cannot overtake them.
                let fresh = rows.filter { $0.cursor > state.sentThrough }
                if live(fresh) {
                    state.sentThrough = fresh.last?.cursor ?? state.sentThrough
                    return false
                }
                state.live = nil
            }
            if state.rows.count + rows.count > Self.capacity {
                state.rows = []
                state.mustRead = true
            } else {
                state.rows += rows
            }
            return true
        }
        if signalled { signal() }
    }

    fileprivate func wake() {
        state.withLock { $0.readInstead() }
        signal()
    }

    fileprivate func finish() {
        state.withLock { $0.live = nil }
        let handler = listener.withLock { listener -> (@Sendable (Notice) -> Void)? in
            guard !listener.finished else { return nil }
            listener.finished = true
            return listener.handler
        }
        handler?(.finished)
    }

    fileprivate func revoke() {
        revoked.store(true, ordering: .releasing)
        finish()
    }

    fileprivate func supersede() {
        superseded.store(true, ordering: .releasing)
        finish()
    }

    fileprivate func markProven(_ order: UInt64) { proof.withLock { $0 = order } }

    fileprivate var provenOrder: UInt64? { proof.withLock { $0 } }

    /// Whether a newer stream of the same device took this one's place: it must close (4409).
    var isSuperseded: Bool { superseded.load(ordering: .acquiring) }

    /// Whether the stream's session ended (signed out, device removed, account deleted): it must
    /// take no more requests and close.
    var isRevoked: Bool { revoked.load(ordering: .acquiring) }

    /// Takes what there is. After `.read` the stream reads everything after `sentThrough`; rows
    /// pushed meanwhile come with the next call and are skipped if the read had them.
    func next() -> Next {
        state.withLock { state in
            defer {
                state.rows = []
                state.mustRead = false
            }
            return state.mustRead ? .read : .entries(state.rows)
        }
    }

    /// The highest cursor the client was sent.
    var sentThrough: Int64 { state.withLock { $0.sentThrough } }

    /// The stream sent the client everything through `cursor`.
    func sent(through cursor: Int64) {
        state.withLock { $0.sentThrough = max($0.sentThrough, cursor) }
    }

    /// The stream is caught up and has sent all it took: until there is something it must do
    /// itself (a read, rows `send` cannot take), rows are handed to `send` as they are pushed,
    /// without waking the stream. False when something waits already; the stream takes it next.
    func goLive(_ send: @escaping LiveSend) -> Bool {
        state.withLock { state in
            guard state.rows.isEmpty, !state.mustRead, !isRevoked else { return false }
            state.live = send
            return true
        }
    }
}
