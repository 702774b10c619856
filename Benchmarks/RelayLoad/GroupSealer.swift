import ArgumentParser
import ConfidantAPI
import ConfidantCrypto
import ConfidantKit
import Foundation
import GRDB
import Synchronization

/// The group sender's side of `relay-load group`: each message sealed and framed as ConfidantKit
/// sends it (`GroupDelivery` with a sender key; the pairwise fan-out `EnvelopeSealer` does), the
/// CPU it took on this thread beside it. Pairwise sessions are started and answered once before,
/// as a chat's are, so no start rides along.
struct GroupSealer {
    struct Message {
        let frames: [(id: UUID, frame: Data)]
        let envelopeBytes: Int
        let cpuSeconds: Double
    }

    private let mode: GroupSendMode
    private let sender: BenchUser
    private let members: [BenchUser]
    private let groupID = UUID()
    private var chain: SenderKeySendingChain
    private var sessions: [SessionRecord]
    private var index = 0

    init(mode: GroupSendMode, sender: BenchUser, members: [BenchUser]) throws {
        self.mode = mode
        self.sender = sender
        self.members = members
        chain = SenderKeySendingChain(groupID: groupID)
        sessions = mode == .pairwise ? try members.map { try Self.answeredSession(from: sender, to: $0) } : []
    }

    /// The next message, sealed and framed.
    mutating func next() throws -> Message {
        index += 1
        let payload = try ChatPayload(
            conversation: groupID, text: "group message \(index) " + String(repeating: "x", count: 1_000)
        ).serialized
        let started = Self.threadCPUSeconds()
        let frames: [(id: UUID, frame: Data)]
        let envelopeBytes: Int
        switch mode {
        case .shared:
            let id = UUID.timeOrdered()
            let envelope = try GroupEnvelope.seal(
                payload, chain: &chain, sender: DeviceAddress(userID: sender.id, deviceID: sender.identity.deviceID),
                messageID: id, timestamp: Date()
            ).serialized
            let recipients = members.map { DeviceAddress(userID: $0.id, deviceID: $0.identity.deviceID) }
            frames = [(id, try SharedSendFrame(recipients: recipients, envelope: envelope).serialized())]
            envelopeBytes = envelope.count
        case .pairwise:
            var out: [(id: UUID, frame: Data)] = []
            var bytes = 0
            for start in stride(from: 0, to: members.count, by: StreamSendFrame.maximumEnvelopes) {
                let id = UUID.timeOrdered()
                let end = min(members.count, start + StreamSendFrame.maximumEnvelopes)
                let envelopes = try (start..<end).map { member in
                    try sessions[member].seal(
                        payload, from: sender.identity, senderUserID: sender.id,
                        to: members[member].identity.publicIdentity, recipientUserID: members[member].id,
                        messageID: id
                    ).serialized
                }
                bytes += envelopes.reduce(0) { $0 + $1.count }
                out.append((id, try StreamSendFrame(envelopes: envelopes).serialized()))
            }
            frames = out
            envelopeBytes = bytes
        }
        return Message(frames: frames, envelopeBytes: envelopeBytes, cpuSeconds: Self.threadCPUSeconds() - started)
    }

    /// A one-to-one message's sealing and framing, CPU seconds each, over `messages` of them.
    static func oneToOneCPU(sender: BenchUser, receiver: BenchUser, messages: Int) throws -> Double {
        var session = try answeredSession(from: sender, to: receiver)
        let payload = try ChatPayload(
            conversation: receiver.id, text: "one-to-one message " + String(repeating: "x", count: 1_000)
        ).serialized
        let started = threadCPUSeconds()
        for _ in 0..<messages {
            let envelope = try session.seal(
                payload, from: sender.identity, senderUserID: sender.id, to: receiver.identity.publicIdentity,
                recipientUserID: receiver.id, messageID: UUID.timeOrdered())
            _ = try StreamSendFrame(envelopes: [envelope.serialized]).serialized()
        }
        return (threadCPUSeconds() - started) / Double(messages)
    }

    /// A session from `sender` to `receiver`, started and answered.
    private static func answeredSession(from sender: BenchUser, to receiver: BenchUser) throws -> SessionRecord {
        var senderPrekeys = try DevicePrekeys.generate()
        var receiverPrekeys = try DevicePrekeys.generate()
        let upload = try receiverPrekeys.upload(
            signedBy: receiver.identity, oneTimePrekeys: Array(receiverPrekeys.allOneTimePrekeys.prefix(1)))
        let bundle = PrekeyBundle(
            deviceID: receiver.identity.deviceID, signedPrekey: upload.signedPrekey, kemPrekey: upload.kemPrekey,
            oneTimePrekey: upload.oneTimePrekeys.first)
        var outgoing = SessionRecord()
        var incoming = SessionRecord()
        try outgoing.start(from: sender.identity, to: receiver.identity.publicIdentity, bundle: bundle)
        let first = try outgoing.seal(
            Data("hello".utf8), from: sender.identity, senderUserID: sender.id,
            to: receiver.identity.publicIdentity, recipientUserID: receiver.id)
        _ = try incoming.open(
            first, as: receiver.identity, recipientUserID: receiver.id, from: sender.identity.publicIdentity,
            prekeys: &receiverPrekeys)
        let answer = try incoming.seal(
            Data("hi".utf8), from: receiver.identity, senderUserID: receiver.id, to: sender.identity.publicIdentity,
            recipientUserID: sender.id)
        _ = try outgoing.open(
            answer, as: sender.identity, recipientUserID: sender.id, from: receiver.identity.publicIdentity,
            prekeys: &senderPrekeys)
        return outgoing
    }

    /// CPU seconds this thread has run (the sealing has no suspension point, so it stays on one).
    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

/// Which member devices have each message: `expect` names a message's ids (one per send frame)
/// and how many arrivals they make in all; its waiter returns when all are in.
final class GroupArrivals: Sendable {
    private struct State {
        var waiting: Set<UUID> = []
        var left = 0
        var result: Bool?
        var continuation: CheckedContinuation<Bool, Never>?
    }

    private let state = Mutex(State())

    struct Waiter {
        let arrivals: GroupArrivals

        /// True once every device has the message; false when `timeout` passes first.
        func wait(within timeout: Duration) async -> Bool {
            let timer = Task {
                // Cancelled once every device has it: the next message's wait is not this one's.
                guard (try? await Task.sleep(for: timeout)) != nil else { return }
                arrivals.finish(false)
            }
            defer { timer.cancel() }
            return await withCheckedContinuation { continuation in
                let result = arrivals.state.withLock { state -> Bool? in
                    if state.result == nil { state.continuation = continuation }
                    return state.result
                }
                if let result { continuation.resume(returning: result) }
            }
        }
    }

    /// Expects each of `ids` (one per send frame) until `devices` arrivals in all.
    func expect(_ ids: Set<UUID>, devices: Int) -> Waiter {
        state.withLock { state in state = State(waiting: ids, left: devices) }
        return Waiter(arrivals: self)
    }

    @Sendable func arrived(_ id: UUID) {
        let finished = state.withLock { state -> Bool in
            guard state.waiting.contains(id), state.result == nil else { return false }
            state.left -= 1
            return state.left == 0
        }
        if finished { finish(true) }
    }

    private func finish(_ result: Bool) {
        let continuation = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: result)
    }
}

/// The bytes the relay's SQLite file uses (its pages less the free ones), and by table and
/// index where SQLite has `dbstat`.
struct StoredBytes {
    let used: Int
    let byTable: [String: Int]

    static func measure(_ path: String) throws -> StoredBytes {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        configuration.readonly = true
        let database = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? database.close() }
        return try database.read { db in
            let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0
            let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            let free = try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0
            let rows = (try? Row.fetchAll(db, sql: "SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name")) ?? []
            return StoredBytes(
                used: (pages - free) * pageSize,
                byTable: Dictionary(rows.map { ($0["name"] as String, $0["bytes"] as Int) }, uniquingKeysWith: +))
        }
    }

    /// What grew since `earlier`, by table and index.
    func delta(from earlier: StoredBytes) -> [String: Int] {
        byTable.compactMapValues { $0 }.reduce(into: [:]) { out, item in
            let grown = item.value - (earlier.byTable[item.key] ?? 0)
            if grown != 0 { out[item.key] = grown }
        }
    }
}
