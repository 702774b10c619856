import ConfidantCrypto
import Foundation
import GRDB
import Testing

@testable import ConfidantKit

/// The store's side of the sending reservation (docs/PROTOCOL.md §9.6): a deferred sealing is
/// synced at once only when it reserves message numbers, and a session row written in an
/// earlier run of the system goes on past its reservation, so that the writes a power cut took
/// never make a message number be used twice.
@Suite("Sessions reserve message numbers in the store")
struct SessionReservationStoreTests {
    /// A peer device with published prekeys, and this device's cipher.
    private struct Peer {
        let me: PrivateIdentity
        let identity: PrivateIdentity
        let user = UUID()
        let prekeys: DevicePrekeys

        init() throws {
            me = try PrivateIdentity.generate()
            identity = try PrivateIdentity.generate()
            prekeys = try DevicePrekeys.generate()
        }

        var cipher: SessionCipher { SessionCipher(identity: me, userID: UUID()) }
        var recipient: SessionCipher.Recipient { .init(user: user, identity: identity.publicIdentity) }

        func bundle() throws -> PrekeyBundle {
            let upload = try prekeys.upload(signedBy: identity, oneTimePrekeys: [])
            return PrekeyBundle(
                deviceID: identity.deviceID, signedPrekey: upload.signedPrekey, kemPrekey: upload.kemPrekey,
                oneTimePrekey: nil)
        }

        /// Seals one message in a deferred transaction; its message number and whether the
        /// transaction was synced (as one commit: a reservation is synced by the commit that
        /// makes it, never by a later write, so no envelope numbered under it leaves first).
        func seal(in store: LocalStore, cipher: SessionCipher, bundle: Bool = false) throws -> (
            number: UInt32, synced: Bool
        ) {
            let sealed = try sealEnvelope(in: store, cipher: cipher, bundle: bundle)
            return (sealed.envelope.messageNumber, sealed.synced)
        }

        /// ``seal(in:cipher:bundle:)`` with the envelope.
        func sealEnvelope(in store: LocalStore, cipher: SessionCipher, bundle: Bool = false) throws -> (
            envelope: RatchetEnvelope, synced: Bool
        ) {
            let before = store.commitCounts.count
            defer { #expect(store.commitCounts.count == before + 1) }
            var runs = 0
            defer { #expect(runs == 1, "one run of the transaction, reserving or not") }
            let (envelopes, commit) = try store.countedTransaction(.deferred) { transaction in
                runs += 1
                return try cipher.seal(
                    Data("hello".utf8), messageID: .timeOrdered(), sentAt: Date(), for: [recipient],
                    bundles: bundle ? [recipient.address: .prekeys(try self.bundle())] : [:],
                    sessions: transaction)
            }
            let envelope = try RatchetEnvelope(serialized: try #require(envelopes.first))
            return (envelope, store.commitCounts.synced == commit)
        }

        /// Opens `envelope` from this side (`cipher`) in a deferred transaction of `store`, as
        /// receiving does; whether its commit was synced.
        /// The peer's side, in memory: it opens the session's start and replies.
        func reply(to start: RatchetEnvelope, cipher: SessionCipher) throws -> (
            envelope: RatchetEnvelope, record: SessionRecord
        ) {
            var record = SessionRecord()
            var prekeys = self.prekeys
            _ = try record.open(
                start, as: identity, recipientUserID: user, from: me.publicIdentity, prekeys: &prekeys)
            let envelope = try record.seal(
                Data("reply".utf8), from: identity, senderUserID: user, to: me.publicIdentity,
                recipientUserID: cipher.userID, messageID: .timeOrdered(), timestamp: Date())
            return (envelope, record)
        }

        func open(_ envelope: RatchetEnvelope, in store: LocalStore, cipher: SessionCipher) throws -> Bool {
            let (_, commit) = try store.countedTransaction(.deferred) { transaction in
                var record = try #require(
                    try transaction.session(with: recipient.address, fingerprint: recipient.fingerprint))
                var unused = try DevicePrekeys.generate()
                _ = try record.open(
                    envelope, as: me, recipientUserID: cipher.userID, from: identity.publicIdentity, prekeys: &unused)
                try transaction.storeSession(record, with: recipient.address, fingerprint: recipient.fingerprint)
            }
            return store.commitCounts.synced == commit
        }
    }

    /// A profile of this device's, and the peer it seals for.
    private struct Fixture {
        let profile = TestProfile()
        let peer: Peer
        let cipher: SessionCipher

        init() throws {
            try profile.storage.prepare()
            peer = try Peer()
            cipher = peer.cipher
        }

        /// The profile's store, opened as in the run of the system `boot`.
        func store(_ boot: String?, syncsStepsInBackground: Bool = true) throws -> LocalStore {
            try LocalStore.open(
                at: profile.storage.storeURL, identity: peer.me, boot: boot,
                syncsStepsInBackground: syncsStepsInBackground)
        }
    }

    private func sessionRow(_ store: LocalStore) throws -> Row? {
        try store.read { db in try Row.fetchOne(db, sql: "SELECT sealed, boot FROM session") }
    }

    /// What a power cut leaves: the session row as `row` was, the writes after it lost.
    private func restore(_ row: Row, in store: LocalStore) throws {
        try store.write { db in
            try db.execute(
                sql: "UPDATE session SET sealed = ?, boot = ?",
                arguments: [row["sealed"] as Data, row["boot"] as String?])
        }
    }

    @Test("a sealing is synced only when it reserves numbers")
    func syncedWhenReserving() throws {
        let fixture = try Fixture()
        defer { fixture.profile.remove() }
        let (peer, cipher) = (fixture.peer, fixture.cipher)
        let store = try fixture.store("run-1")
        #expect(store.sealing == .deferred)
        let reservation = RatchetSession.sendingReservation
        for number in 0..<(2 * reservation + 1) {
            let sealed = try peer.seal(in: store, cipher: cipher, bundle: number == 0)
            #expect(sealed.number == number)
            #expect(sealed.synced == (number % reservation == 0), "message \(number)")
        }
        #expect(try sessionRow(store)?["boot"] as String? == "run-1")

        let unknownRun = try fixture.store(nil)
        #expect(unknownRun.sealing == .synced, "without the system's run, sealing waits for the disk")
    }

    @Test("a session row from an earlier run of the system goes on past its reservation")
    func earlierRunSkips() throws {
        let fixture = try Fixture()
        defer { fixture.profile.remove() }
        let (peer, cipher) = (fixture.peer, fixture.cipher)
        let store = try fixture.store("run-1")
        #expect(try peer.seal(in: store, cipher: cipher, bundle: true) == (0, true))
        // The row as the synced write left it; the next three seals are not synced.
        let onDisk = try #require(try sessionRow(store))
        for number in 1...3 { #expect(try peer.seal(in: store, cipher: cipher) == (UInt32(number), false)) }

        // A power cut takes the three writes that were not synced.
        try restore(onDisk, in: store)
        // Read back in the same run (as no power cut allows), the chain would use number 1
        // again: what the run's id is there to rule out.
        let sameRun = try fixture.store("run-1")
        #expect(try peer.seal(in: sameRun, cipher: cipher).number == 1)

        try restore(onDisk, in: store)
        let nextRun = try fixture.store("run-2")
        let sealed = try peer.seal(in: nextRun, cipher: cipher)
        #expect(sealed.number == RatchetSession.sendingReservation, "past every number the lost writes used")
        #expect(sealed.synced, "a new reservation, synced before its envelope leaves")
        #expect(try sessionRow(nextRun)?["boot"] as String? == "run-2")
        #expect(try peer.seal(in: nextRun, cipher: cipher) == (RatchetSession.sendingReservation + 1, false))

        // Rows from before the column (NULL) count as an earlier run.
        try nextRun.write { db in try db.execute(sql: "UPDATE session SET boot = NULL") }
        let afterUpgrade = try fixture.store("run-2")
        #expect(try peer.seal(in: afterUpgrade, cipher: cipher).number == 2 * RatchetSession.sendingReservation)
    }

    @Test(
        "a DH ratchet step commits without a sync, its chain's first seals too, and the step is on disk before anything sealed after it leaves"
    )
    func newChainsAreOnDiskFirst() async throws {
        let fixture = try Fixture()
        defer { fixture.profile.remove() }
        let (peer, cipher) = (fixture.peer, fixture.cipher)
        // Without the sync a step starts in the background: only the one before sending is left.
        let store = try fixture.store("run-1", syncsStepsInBackground: false)
        let start = try peer.sealEnvelope(in: store, cipher: cipher, bundle: true)
        #expect(start.synced, "a session began")
        let reply = try peer.reply(to: start.envelope, cipher: cipher)

        // Opening it turns this side's DH ratchet: received, not yet synced (it is synced before
        // the relay is told, as any received batch).
        #expect(try !peer.open(reply.envelope, in: store, cipher: cipher))
        let step = store.commitCounts.count
        #expect(store.commitCounts.synced < step)
        #expect(store.syncThroughBeforeSending >= step)
        // The new chain was born with its reservation: its first seal does not wait for the disk.
        let onNewChain = try peer.sealEnvelope(in: store, cipher: cipher)
        #expect(onNewChain.envelope.messageNumber == 0)
        #expect(onNewChain.envelope.ratchetKey != start.envelope.ratchetKey)
        #expect(!onNewChain.synced)
        #expect(store.commitCounts.synced < step)
        // But the step is on disk before it leaves. Were the step lost after the envelope left,
        // the next run would make the step again from another ratchet key, while the peer, having
        // read the envelope, went on from the lost one: everything sent after would be unreadable
        // to it.
        try await store.syncBeforeSending()
        #expect(store.commitCounts.synced >= step)
        #expect(try peer.seal(in: store, cipher: cipher) == (1, false), "then within its reservation")
        var peerRecord = reply.record
        var peerPrekeys = peer.prekeys
        _ = try peerRecord.open(
            onNewChain.envelope, as: peer.identity, recipientUserID: peer.user, from: peer.me.publicIdentity,
            prekeys: &peerPrekeys)
    }

    @Test("a DH ratchet step is synced in the background as it commits, before any reply is sealed on its chain")
    func stepsSyncedInTheBackground() async throws {
        let fixture = try Fixture()
        defer { fixture.profile.remove() }
        let (peer, cipher) = (fixture.peer, fixture.cipher)
        let store = try fixture.store("run-1")
        let start = try peer.sealEnvelope(in: store, cipher: cipher, bundle: true)
        let reply = try peer.reply(to: start.envelope, cipher: cipher)
        _ = try peer.open(reply.envelope, in: store, cipher: cipher)
        let step = store.commitCounts.count
        // Nothing else commits or syncs here: the step's own commit started its sync.
        try await waitUntil { store.commitCounts.synced >= step }
        let log = try #require(store.log)
        let syncs = log.syncs.load(ordering: .relaxed)
        #expect(try peer.seal(in: store, cipher: cipher) == (0, false))
        try await store.syncBeforeSending()
        #expect(log.syncs.load(ordering: .relaxed) == syncs, "the reply leaves without waiting for the disk")
    }

    @Test(
        "what another process on the profile committed is synced before anything sealed after it leaves, and nothing is synced while no other process writes"
    )
    func otherProcessesSyncedBeforeSending() async throws {
        let fixture = try Fixture()
        defer { fixture.profile.remove() }
        let (peer, cipher) = (fixture.peer, fixture.cipher)
        let store = try fixture.store("run-1")
        let log = try #require(store.log)
        func syncs() -> Int { log.syncs.load(ordering: .relaxed) }
        #expect(try peer.seal(in: store, cipher: cipher, bundle: true) == (0, true), "a session began")
        try await store.syncBeforeSending()
        // Within the reservation, while this process is the profile's only writer: nothing to sync.
        let before = syncs()
        #expect(try peer.seal(in: store, cipher: cipher) == (1, false))
        try await store.syncBeforeSending()
        #expect(syncs() == before)
        #expect(store.commitCounts.synced < store.commitCounts.count)

        // Another process on the profile commits without a sync of its own (its commit is
        // readable here at once: a reservation it made would be too, before its sync is done).
        let otherProcess = try fixture.store("run-1")
        _ = try otherProcess.countedWrite(.deferred) { db in
            try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('other process', x'01')")
        }
        // A transaction that rolls back saw it too, but only one that commits counts it as seen.
        struct Abandoned: Error {}
        #expect(throws: Abandoned.self) {
            try store.countedTransaction(.deferred) { _ in throw Abandoned() }
        }
        #expect(try peer.seal(in: store, cipher: cipher) == (2, false))
        let sealed = store.commitCounts.count
        #expect(store.commitCounts.synced < sealed)
        try await store.syncBeforeSending()
        #expect(syncs() == before + 1, "the log synced, every process's frames with it")
        #expect(store.commitCounts.synced >= sealed)

        // Seen and synced: the next seals go without a sync again.
        #expect(try peer.seal(in: store, cipher: cipher) == (3, false))
        try await store.syncBeforeSending()
        #expect(syncs() == before + 1)
        #expect(store.commitCounts.synced < store.commitCounts.count)
    }

    @Test("the log's own sync makes a deferred commit durable without a write")
    func logSync() async throws {
        let profile = TestProfile()
        defer { profile.remove() }
        try profile.storage.prepare()
        let store = try LocalStore.open(
            at: profile.storage.storeURL, identity: PrivateIdentity.generate(), boot: "run-1")
        let (_, commit) = try store.countedWrite(.deferred) { db in
            try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('test', x'01')")
        }
        let before = store.commitCounts
        #expect(before.synced < commit)
        try await store.syncLog(through: commit)
        let after = store.commitCounts
        #expect(after.count == before.count, "no write of its own")
        #expect(after.synced >= commit)
        // Synced already: nothing to do.
        try await store.syncLog(through: commit)
        #expect(store.commitCounts == after)
    }
}
