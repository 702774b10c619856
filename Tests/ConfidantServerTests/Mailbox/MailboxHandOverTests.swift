import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantServer

/// On PostgreSQL a commit's rows go to this instance's streams only if each stream has what its
/// device had before them (`MailboxHandOver`); an entry another instance stored, whose notice has
/// not come (or was lost), must not be skipped.
@Suite("Mailbox hand-over on PostgreSQL")
struct MailboxHandOverTests {
    /// What the writer hands over: the rows with the cursors PostgreSQL gave them, in cursor order,
    /// and for each device the greatest cursor before its first row — also when the rows take
    /// two statements and the second sees the first's.
    @Test(
        "insertHandingOver answers the rows as stored, in cursor order, with each device's greatest cursor before them")
    func insertAnswersCursorsAndWhatCameBefore() async throws {
        try await TestRelay.run(.postgres) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let db = relay.server.application.db
            let entry = { (recipient: DeviceAddress) in
                NewMailboxEntry(
                    recipient: recipient, kind: .envelope, sender: alice.address, messageID: UUID(),
                    payload: Data([7]), receivedAt: Date())
            }
            let before = try await MailboxTable.page(of: bob.address, after: 0, limit: 100, on: db).last?.cursor ?? 0

            let first = [entry(bob.address), entry(alice.address), entry(bob.address)]
            let firstHandOver = try #require(try await MailboxTable.insertHandingOver(first, on: db))
            let cursors = firstHandOver.entries.map(\.entry.cursor)
            #expect(cursors == cursors.sorted() && Set(cursors).count == 3)
            #expect(firstHandOver.entries.map(\.entry.messageID) == first.map(\.messageID))
            #expect(firstHandOver.following[bob.address] == before)
            let stored = try await MailboxTable.page(of: bob.address, after: before, limit: 100, on: db)
            let bobs = firstHandOver.entries.filter { $0.recipient == bob.address }
            #expect(stored.map(\.cursor) == bobs.map(\.entry.cursor))

            // 1,001 rows: two statements.
            let many = (0..<1_001).map { _ in entry(bob.address) }
            let manyHandOver = try #require(try await MailboxTable.insertHandingOver(many, on: db))
            #expect(manyHandOver.entries.count == 1_001)
            #expect(manyHandOver.entries.map(\.entry.messageID) == many.map(\.messageID))
            #expect(manyHandOver.following == [bob.address: stored.last?.cursor ?? -1])
        }
    }

    @Test(
        "a stream behind another instance's entry reads instead of taking the hand-over: both arrive, in order")
    func handOverDoesNotSkipAnotherInstancesEntry() async throws {
        try await TestRelay.run(.postgres) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let bobDevices = [(bob.address, bob.identity.publicIdentity)]
            let stream = try await StreamClient.connect(port: relay.port, user: bob)
            #expect(await stream.frames.next(1).first?.caughtUp == true)
            _ = try await alice.send("handed over", to: bobDevices)
            #expect(await stream.frames.next(1).compactMap(\.entry).count == 1)

            // As another instance would store it, with no hand-over here and no notice.
            let elsewhere = UUID()
            try await MailboxTable.insert(
                [
                    NewMailboxEntry(
                        recipient: bob.address, kind: .envelope, sender: alice.address, messageID: elsewhere,
                        payload: Data([1, 2, 3]), receivedAt: Date())
                ], on: relay.server.application.db)
            let next = UUID()
            _ = try await alice.send("after it", to: bobDevices, messageID: next)
            let entries = await stream.frames.next(2).compactMap(\.entry)
            #expect(entries.map(\.messageId) == [elsewhere.canonicalString, next.canonicalString])
            #expect(entries.count == 2 && entries[0].cursor < entries[1].cursor)
            await stream.close()
        }
    }
}
