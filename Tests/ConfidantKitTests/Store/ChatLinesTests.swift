import ConfidantCrypto
import Foundation
import GRDB
import Testing

@testable import ConfidantKit

@Suite("An open chat follows the rows each commit changed")
struct ChatLinesTests {
    /// Reproducible choices (SplitMix64), so that a failing sequence can be replayed by its seed.
    struct Choices: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    private struct Failure: Error {}

    private func pointer(_ name: String) -> AttachmentPointer {
        AttachmentPointer(
            id: UUID(), blobID: UUID(), capability: "cap", key: Data(repeating: 7, count: 32),
            digest: String(repeating: "ab", count: 32), size: 5, contentType: "text/plain", name: name,
            thumbnail: nil)
    }

    @Test(
        "after every kind of change, and with the chat full and scrolling, the lines equal a whole fetch",
        arguments: [1, 2, 3] as [UInt64])
    func matchesAWholeFetch(seed: UInt64) throws {
        let profile = TestProfile()
        defer { profile.remove() }
        let store = try profile.openStore()
        let peer = UUID()
        let other = UUID()
        let me = UUID()
        let limit = 8
        var choices = Choices(state: seed)
        let base = Date(timeIntervalSince1970: 1_800_000_000)
        var clock = 0.0
        func now() -> Date {
            clock += 1
            return base.addingTimeInterval(clock)
        }
        func message(to who: UUID, _ direction: ChatMessage.Direction, files: Int = 0, expiring: Bool = false)
            -> LocalStore.NewMessage
        {
            let sent = now()
            return .init(
                id: .timeOrdered(at: sent), peer: who, direction: direction, senderDevice: nil, sentAt: sent,
                text: "text \(clock)", unreadableReason: nil, state: direction == .incoming ? .received : .sent,
                attachments: (0..<files).map { pointer("file-\(clock)-\($0)") },
                expiresAt: expiring ? sent.addingTimeInterval(Double(Int.random(in: 1...40, using: &choices))) : nil)
        }
        func lines(direction: ChatMessage.Direction? = nil) throws -> [ChatMessage] {
            try store.history(with: peer, limit: 1_000).filter { direction == nil || $0.direction == direction }
        }

        let (observer, stream) = try ChatLines.started(in: store, with: peer, limit: limit)
        var checked = 0
        for step in 0..<400 {
            let action = Int.random(in: 0..<14, using: &choices)
            switch action {
            case 0, 1:
                try store.insert([message(to: peer, .incoming, files: Int.random(in: 0...2, using: &choices))])
            case 2:
                try store.insert([message(to: other, .incoming, files: 1)])
            case 3:
                var queued = message(to: peer, .outgoing)
                queued.state = .pending
                _ = try store.queue(queued, confirmed: false, now: now())
            case 4:
                if let pending = try lines(direction: .outgoing).filter({ $0.status == .pending }).randomElement(
                    using: &choices)
                {
                    try store.finish([pending.id], failure: Bool.random(using: &choices) ? nil : .other("refused"))
                }
            case 5:
                if let first = try store.outbox().first {
                    try store.deferDelivery(of: first.message.id, until: now(), reason: "offline \(step)")
                }
            case 6:
                let outgoing = try lines(direction: .outgoing).shuffled(using: &choices).prefix(3).map(\.id)
                let kind: Receipt.Kind = Bool.random(using: &choices) ? .delivered : .read
                _ = try store.write { db in try store.applyReceipt(Receipt(kind, messageIDs: outgoing), from: peer, db)
                }
            case 7:
                if let target = try lines(direction: .incoming).randomElement(using: &choices) {
                    _ = try store.write { db in
                        try store.applyEdit(
                            target.id, text: "edited \(step)", author: peer, me: me, conversation: peer, inGroup: false,
                            at: now(), db)
                    }
                }
            case 8:
                if let target = try lines(direction: .incoming).randomElement(using: &choices) {
                    _ = try store.write { db in
                        try store.applyDeletion(
                            target.id, author: peer, me: me, conversation: peer, inGroup: false, at: now(), db)
                    }
                }
            case 9:
                try store.markRead(peer: peer, queueingReceipts: Bool.random(using: &choices), now: now())
            case 10:
                try store.insert([message(to: peer, .incoming, files: 1, expiring: true)])
                try store.deleteExpired(now: base.addingTimeInterval(clock), me: UUID())
            case 11:
                // An attachment's pointer replaced (as an upload does): only the attachment row changes.
                if let line = try lines().filter({ !$0.attachments.isEmpty }).randomElement(using: &choices) {
                    var replaced = try store.read { db in
                        try store.attachments(of: line.id, peer: peer, direction: line.direction, db)
                    }[0]
                    replaced.thumbnail = Data("thumbnail \(step)".utf8)
                    try store.write { db in
                        try store.updateAttachment(
                            replaced, message: line.id, peer: peer, direction: line.direction, db)
                    }
                }
            case 12:
                // Rolled back: nothing it wrote is seen.
                #expect(throws: Failure.self) {
                    try store.write { db in
                        _ = try store.insert([message(to: peer, .incoming)], db)
                        throw Failure()
                    }
                }
            default:
                if let failed = try lines(direction: .outgoing).first(where: {
                    if case .failed = $0.status { true } else { false }
                }) {
                    _ = try store.requeue(failed.id, confirmed: false, now: now())
                }
            }
            let observed = store.database.writeWithoutTransaction { _ in observer.lines }
            let expected = try store.history(with: peer, limit: limit)
            #expect(observed == expected, "seed \(seed), step \(step), action \(action)")
            if observed != expected { return }
            checked += 1
        }
        #expect(checked == 400)
        let (partial, whole) = store.database.writeWithoutTransaction { _ in
            (observer.partialFetches, observer.wholeFetches)
        }
        #expect(partial > 3 * whole, "most commits read only their rows (\(partial) partial, \(whole) whole)")
        let asInserted = store.database.writeWithoutTransaction { _ in observer.linesAsInserted }
        #expect(asInserted > 10, "new lines without attachments are shown as written (\(asInserted))")
        // Texts are kept for the lines in view only.
        #expect(observer.texts.keptLines.isSubset(of: Set(try store.history(with: peer, limit: limit).map(\.sequence))))
        withExtendedLifetime(stream) {}
    }

    @Test("a new line is read alone, and a screen behind gets the latest lines")
    func readsOnlyTheNewLine() async throws {
        let profile = TestProfile()
        defer { profile.remove() }
        let store = try profile.openStore()
        let peer = UUID()
        func incoming(_ text: String) -> LocalStore.NewMessage {
            .init(
                id: .timeOrdered(at: Date()), peer: peer, direction: .incoming, senderDevice: nil, sentAt: Date(),
                text: text, unreadableReason: nil, state: .received)
        }
        try store.insert((0..<50).map { incoming("old \($0)") })
        let (observer, stream) = try ChatLines.started(in: store, with: peer, limit: 20)
        #expect(observer.texts.opened == 20)
        for index in 0..<5 { try store.insert([incoming("new \(index)")]) }
        #expect(observer.texts.opened == 20, "the new lines shown as written, none of the others opened again")
        #expect(observer.linesAsInserted == 5)
        // The plaintext of what a transaction inserted is kept only while it runs.
        let newest = try store.history(with: peer, limit: 1)[0]
        #expect(store.insertedLines.line(newest.sequence) == nil)
        #expect(observer.wholeFetches == 1)
        #expect(observer.partialFetches == 5)
        var iterator = stream.makeAsyncIterator()
        let latest = try await iterator.next()
        #expect(latest?.map(\.text) == (35..<50).map { "old \($0)" } + (0..<5).map { "new \($0)" })
        #expect(observer.texts.keptLines == Set(latest?.map(\.sequence) ?? []))
    }

    @Test("ending the stream ends the observation")
    func endsWithTheStream() async throws {
        let profile = TestProfile()
        defer { profile.remove() }
        let store = try profile.openStore()
        weak var weakObserver: ChatLines?
        do {
            let (observer, stream) = try ChatLines.started(in: store, with: UUID(), limit: 10)
            weakObserver = observer
            #expect(store.insertedLines.isFollowed)
            withExtendedLifetime(stream) {}
        }
        // The store forgets it in a write of its own, after the stream ended.
        try await store.database.writeWithoutTransaction { _ in }
        #expect(weakObserver == nil)
        #expect(!store.insertedLines.isFollowed, "inserted lines are no longer kept for it")
    }
}
