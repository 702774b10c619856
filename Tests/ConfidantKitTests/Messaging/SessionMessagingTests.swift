import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import GRDB
import Testing

@testable import ConfidantKit

/// Envelope v2 through ConfidantKit and a real relay: sessions, prekeys, the v1 fallback.
@Suite("Sessions through the messenger")
struct SessionMessagingTests {
    @Test("messages travel in v2 sessions both ways; the sessions are stored sealed")
    func sessionsBothWays() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email)
            for index in 0..<3 { _ = try await alice.messenger.send("first contact \(index)", to: toBob) }
            let received = try await bob.messenger.sync()
            #expect(received.map(\.text) == ["first contact 0", "first contact 1", "first contact 2"])
            #expect(received.allSatisfy { $0.envelopeVersion == 2 })
            let toAlice = try await bob.messenger.contact(email: alice.email)
            _ = try await bob.messenger.send("reply in the session", to: toAlice)
            let reply = try await alice.messenger.sync()
            #expect(reply.map(\.text) == ["reply in the session"])
            #expect(reply.first?.envelopeVersion == 2)
            #expect(try alice.messenger.store.sessionCount() == 1)
            #expect(try bob.messenger.store.sessionCount() == 1)
            // The sessions' secrets are sealed: no stored chain or root key appears in the database file.
            let aliceID = await alice.messenger.me
            let record = try #require(
                try bob.messenger.store.session(
                    with: DeviceAddress(userID: aliceID, deviceID: alice.messenger.identity.deviceID),
                    fingerprint: IdentityFingerprint(alice.messenger.identity.publicIdentity).description))
            // Bytes 66..<98 of a serialized session are its root key (docs/PROTOCOL.md §9.5).
            let root = record.sessions[0].serialized[66..<98]
            let file =
                try Data(contentsOf: bob.profile.storage.storeURL)
                + ((try? Data(contentsOf: URL(fileURLWithPath: bob.profile.storage.storeURL.path + "-wal")))
                    ?? Data())
            #expect(file.range(of: Data(root)) == nil)
        }
    }

    @Test(
        "two processes on one profile sending at once share its sessions in turn: every message opens, none is refused"
    )
    func twoProcessesOneProfile() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email)
            _ = try await alice.messenger.send("the session starts", to: toBob)
            // A second opening of Alice's profile: its own connection to the store, as `confidant
            // send` has while `confidant chat` runs in another terminal.
            let second = try Messenger.open(alice.profile.storage, passphrase: TestProfile.passphrase)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (name, messenger) in [("one", alice.messenger), ("two", second)] {
                    group.addTask {
                        for index in 0..<15 { _ = try await messenger.send("\(name) \(index)", to: toBob) }
                    }
                }
                try await group.waitForAll()
            }
            let sent = try await alice.messenger.history(with: toBob.id, limit: 100)
            #expect(sent.filter { $0.status != .sent }.isEmpty, "\(sent.map(\.status))")
            let received = try await bob.messenger.sync()
            #expect(received.count == 31)
            #expect(
                received.allSatisfy { $0.unreadableReason == nil }, "\(received.compactMap(\.unreadableReason))")
        }
    }

    @Test(
        "a message sent while nothing waits is stored, queued and sealed in one commit, then marked sent, its copy synced in the background; send answers it as stored"
    )
    func sealedAsQueued() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email)
            // The first starts the session (a prekey bundle claimed over the network): the
            // usual path, queued first. Its sealing reserved message numbers: synced as it
            // committed, before the envelope left (the commit after it, marking it sent, is not).
            let store = alice.messenger.store
            _ = try await alice.messenger.send("first", to: toBob)
            #expect(store.commitCounts.synced == store.commitCounts.count - 1)
            let before = store.commitCounts
            let sent = try await alice.messenger.send("second", to: toBob)
            let after = store.commitCounts
            #expect(sent.status == .sent)
            // One commit (message, outbox row, session; the session had reserved the
            // message's number, so it was not synced before the envelope left), then one
            // that need not sync (marked sent: lost, the relay answers the resend as a
            // duplicate). The relay holds the message: its copy here is synced in the
            // background, by the log's own sync (no commit of its own).
            #expect(after.count == before.count + 2)
            // Synced by itself, a moment later, without a commit of its own.
            try await waitUntil { store.commitCounts.synced >= before.count + 1 }
            #expect(store.commitCounts.count == after.count)
            // What `send` answers (not read back) is what the store holds.
            let readBack = try store.message(id: sent.id, direction: .outgoing)
            #expect(readBack == sent, "\(String(describing: readBack)) \(sent)")
            #expect(try store.outbox().isEmpty)
            #expect(try await bob.messenger.sync().map(\.text) == ["first", "second"])

            // Closing does not leave a sent message's copy to its background sync: what
            // waits for it is synced before `backgroundSyncsDone` (`stopLive`) returns.
            _ = try await alice.messenger.send("third", to: toBob)
            let third = store.commitCounts.count
            await store.backgroundSyncsDone()
            #expect(store.commitCounts.synced >= third)
        }
    }

    @Test(
        "over the live stream, the first message on a new sending chain leaves without waiting for the disk, sealed as it was queued in one commit: the step that started the chain is on disk already"
    )
    func newChainSyncedBeforeItLeavesLive() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email)
            let store = alice.messenger.store
            for user in [alice, bob] {
                #expect(await user.messenger.goLive())
            }
            _ = try await alice.messenger.send("one", to: toBob)
            // Bob's receipt turns Alice's DH ratchet: her next message starts a new chain. The
            // step's commit synced it in the background.
            try await waitUntil { try await alice.messenger.history(with: toBob.id).first?.status == .delivered }
            try await waitUntil { store.commitCounts.synced == store.commitCounts.count }
            let before = store.commitCounts.count
            #expect(store.syncThroughBeforeSending <= before)
            let windows = alice.diagnostics.record.sentInWindows
            let reserving = alice.diagnostics.record.reservingCommits
            _ = try await alice.messenger.send("two", to: toBob)
            #expect(alice.diagnostics.record.sentInWindows == windows + 1, "sealed as queued, sent in a window")
            // Stored, queued and sealed in one commit within the reservation the chain was
            // born with, and marked sent: neither synced as it committed (the copy is synced
            // in the background, 100 ms later). (Other commits may land meanwhile on a slow
            // machine: the receiver's receipt, the sync of a received batch.)
            #expect(store.commitCounts.count >= before + 2)
            #expect(alice.diagnostics.record.reservingCommits == reserving)
            try await waitUntil { try await bob.messenger.history(with: alice.messenger.me).count == 2 }
            let received = try await bob.messenger.history(with: alice.messenger.me)
            #expect(received.allSatisfy { $0.unreadableReason == nil })
            await alice.messenger.stopLive()
            await bob.messenger.stopLive()
        }
    }

    @Test(
        "a send after another process on the profile committed syncs the log before its envelope leaves; without one, it does not wait for the disk"
    )
    func sendSyncsWhatAnotherProcessWrote() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email)
            let store = alice.messenger.store
            _ = try await alice.messenger.send("first", to: toBob)
            _ = try await alice.messenger.send("second", to: toBob)
            try await waitUntil { store.commitCounts.synced == store.commitCounts.count }
            // Within the reservation: the envelope left before its commit was on disk (the
            // background sync comes 100 ms later).
            _ = try await alice.messenger.send("third", to: toBob)
            #expect(store.commitCounts.synced < store.commitCounts.count)
            try await waitUntil { store.commitCounts.synced == store.commitCounts.count }

            // Another process on Alice's profile (`confidant send` beside the app) commits.
            let otherProcess = try LocalStore.open(
                at: alice.profile.storage.storeURL, identity: alice.messenger.identity)
            _ = try otherProcess.countedWrite(.deferred) { db in
                try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('other process', x'01')")
            }
            let sealedFrom = store.commitCounts.count
            _ = try await alice.messenger.send("fourth", to: toBob)
            // Its sealing saw the other commit: the log was synced before the envelope left.
            #expect(store.commitCounts.synced > sealedFrom)
            #expect(try await bob.messenger.sync().map(\.text) == ["first", "second", "third", "fourth"])
        }
    }

    @Test(
        "after a power cut took the session writes that were not synced, the next run seals past them and the peer reads on"
    )
    func powerCutTakesSessionWrites() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email)
            _ = try await alice.messenger.send("first", to: toBob)
            // The session as the first message's synced commit left it on disk.
            let store = alice.messenger.store
            let onDisk = try store.read { db in try Row.fetchAll(db, sql: "SELECT * FROM session") }
            #expect(onDisk.count == 1)
            // Sealed within the reservation: their envelopes left before their state was synced.
            for text in ["second", "third"] { _ = try await alice.messenger.send(text, to: toBob) }
            #expect(try await bob.messenger.sync().map(\.text) == ["first", "second", "third"])

            // The power cut: the session writes not synced are gone; the system starts a new run.
            try store.write { db in
                for row in onDisk {
                    try db.execute(
                        sql: "UPDATE session SET sealed = ?, boot = ? WHERE user_id = ? AND device_id = ?",
                        arguments: [row["sealed"], row["boot"], row["user_id"], row["device_id"]])
                }
            }
            let nextRun = try LocalStore.open(
                at: alice.profile.storage.storeURL, identity: alice.messenger.identity, boot: "the next run")
            let restarted = Messenger(
                identity: alice.messenger.identity, account: await alice.messenger.account, store: nextRun)
            _ = try await restarted.send("after the power cut", to: toBob)
            // Sealed with a message number the lost writes never used: it opens, where the
            // number they used (1, again) would be refused as a replay.
            let after = try await bob.messenger.sync()
            #expect(after.map(\.text) == ["after the power cut"])
            #expect(after.allSatisfy { !$0.isUnreadable && $0.envelopeVersion == 2 })
        }
    }

    @Test(
        "received messages are committed without a sync, shown, then synced before they are acknowledged; known senders are remembered"
    )
    func receivingSyncsBeforeTheAcknowledgement() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email)
            // Bob learns Alice's keys with the first message (a write of its own).
            _ = try await alice.messenger.send("first", to: toBob)
            let aliceDevice = KnownSenders.Sender(
                user: await alice.messenger.me, device: alice.messenger.identity.publicIdentity.deviceID)
            #expect(!bob.messenger.store.knownSenders.contains(aliceDevice))
            #expect(try await bob.messenger.sync().count == 1)
            // Found in the store with the next batch and remembered: later batches do not ask it.
            _ = try await alice.messenger.send("second", to: toBob)
            #expect(try await bob.messenger.sync().count == 1)
            #expect(bob.messenger.store.knownSenders.contains(aliceDevice))
            for index in 0..<3 { _ = try await alice.messenger.send("later \(index)", to: toBob) }
            let store = bob.messenger.store
            let entries = try await bob.mailbox()
            #expect(entries.count == 3)
            let events = await bob.messenger.events()
            let before = store.commitCounts
            let (stored, cursors) = try await bob.messenger.receiver.receive(entries)
            let after = store.commitCounts
            #expect(stored.map(\.text) == ["later 0", "later 1", "later 2"])
            #expect(cursors == entries.map(\.cursor))
            // One commit that did not wait for the disk, then one that synced it, before `receive`
            // returned the cursors its caller acknowledges.
            #expect(after.count == before.count + 2)
            #expect(after.synced == after.count)
            var shown: [String] = []
            for await event in events {
                if case .message(let message) = event, let text = message.text { shown.append(text) }
                if shown.count == 3 { break }
            }
            #expect(shown == ["later 0", "later 1", "later 2"])
        }
    }

    @Test("a receipt sealed within its session's reservation, and taken off its queue, does not wait for the disk")
    func receiptsDeferred() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email)
            _ = try await alice.messenger.send("first", to: toBob)
            // Bob's session begins with the start it receives (synced), and his delivery
            // receipt goes with the sync.
            #expect(try await bob.messenger.sync().map(\.text) == ["first"])
            let store = bob.messenger.store
            let alicesID = await alice.messenger.me
            #expect(try store.markRead(peer: alicesID, queueingReceipts: true).count == 1)
            let before = store.commitCounts
            #expect(try await bob.messenger.flushOutbox() == 0, "a control message, not a message")
            let after = store.commitCounts
            // The read receipt sealed (its number reserved with the chain), then taken off
            // the queue: two commits, neither synced. Lost to a power cut, the receipt is
            // sealed again past the reservation and the relay keeps one of each id.
            #expect(after.count == before.count + 2)
            #expect(after.synced == before.synced)
            #expect(try store.controls().isEmpty)
            // Alice opens it: her message is read.
            _ = try await alice.messenger.sync()
            #expect(try await alice.messenger.history(with: toBob.id).map(\.status) == [.read])
        }
    }

    @Test("forward secrecy on disk: the session and prekeys Bob stored cannot open what he already received")
    func storedStateCannotReopen() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email)
            for index in 0..<3 { _ = try await alice.messenger.send("forward secret \(index)", to: toBob) }
            // What an attacker who recorded the traffic (or the relay) keeps: the envelopes as sent.
            let recorded = try await bob.mailbox(after: 0).compactMap { $0.envelope.map { Data($0.data) } }
            #expect(recorded.count == 3)
            #expect(try await bob.messenger.sync().count == 3)
            // Later the attacker takes Bob's unlocked device: the stored session and prekeys.
            let aliceID = await alice.messenger.me
            let bobID = await bob.messenger.me
            let aliceKey = alice.messenger.identity.publicIdentity
            var record = try #require(
                try bob.messenger.store.session(
                    with: DeviceAddress(userID: aliceID, deviceID: aliceKey.deviceID),
                    fingerprint: IdentityFingerprint(aliceKey).description))
            var prekeys = try #require(try bob.messenger.store.prekeys())
            for bytes in recorded {
                guard case .ratchet(let envelope) = try WireEnvelope(serialized: bytes) else {
                    Issue.record("expected a v2 envelope")
                    continue
                }
                #expect(throws: SessionError.self) {
                    try record.open(
                        envelope, as: bob.messenger.identity, recipientUserID: bobID, from: aliceKey,
                        prekeys: &prekeys)
                }
            }
        }
    }

    @Test("a device without prekeys gets v1, is still readable, and v2 starts once it publishes")
    func fallbackToVersionOne() async throws {
        try await TestRelay.run { relay in
            let alice = try await KitUser.register(relay, name: "Alice")
            // Dave's device signed in with an older client: it never published prekeys.
            let dave = TestProfile()
            defer {
                Task {
                    await alice.remove()
                    dave.remove()
                }
            }
            let identity = try PrivateIdentity.generate()
            try dave.storage.prepare()
            try dave.storage.keyStore.saveIdentity(identity, passphrase: TestProfile.passphrase)
            let email = "dave-\(UUID().uuidString.prefix(8).lowercased())@example.com"
            let password = "correct horse battery Dave"
            _ = try await relay.client().signUp(
                body: .json(.init(email: email, password: password, displayName: "Dave"))
            ).created
            _ = try await RawSignIn.session(relay, email: email, password: password, identity: identity)
            let toDave = try await alice.messenger.contact(email: email)
            _ = try await alice.messenger.send("sealed the old way", to: toDave)
            // Dave updates: the same device and key, now with prekeys.
            let updated = try await Messenger.login(
                dave.storage, passphrase: TestProfile.passphrase, server: relay.baseURL, email: email,
                password: password, answer: KitUser.mailedCode(relay, email: email))
            let old = try await updated.sync()
            #expect(old.map(\.text) == ["sealed the old way"])
            #expect(old.first?.envelopeVersion == 1)
            _ = try await updated.send("and now in a session", to: try await updated.contact(email: alice.email))
            let answer = try await alice.messenger.sync()
            #expect(answer.first?.envelopeVersion == 2)
            _ = try await alice.messenger.send("v2 from here on", to: toDave)
            #expect(try await updated.sync().first?.envelopeVersion == 2)
        }
    }

    @Test("claimed one-time prekeys: the low-water notice makes the device publish more")
    func replenishesAfterLowWater() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let bobID = await bob.messenger.me
            func status() async throws -> Components.Schemas.PrekeyStatus {
                switch try await bob.messenger.relay.call({ try await $0.prekeyStatus() }) {
                case .ok(let ok): return try ok.body.json
                default: throw ConfidantKitError.notSignedIn
                }
            }
            #expect(try await status().oneTimePrekeys == DevicePrekeys.batchSize)
            var handedOut = Set<Int64>()
            for _ in 0..<85 {
                let bundles = try await alice.messenger.relay.call {
                    try await $0.claimPrekeyBundles(path: .init(userId: bobID.canonicalString), query: .init())
                }.ok.body.json
                if let id = bundles.first?.oneTimePrekey?.id { handedOut.insert(id) }
            }
            #expect(handedOut.count == 85, "no one-time prekey is handed out twice")
            #expect(try await status().oneTimePrekeys == 15)
            _ = try await bob.messenger.sync()
            #expect(try await status().oneTimePrekeys == 15 + DevicePrekeys.batchSize)
            // A session still starts and opens after the top-up.
            _ = try await alice.messenger.send(
                "after the top-up", to: try await alice.messenger.contact(email: bob.email))
            #expect(try await bob.messenger.sync().map(\.text) == ["after the top-up"])
        }
    }
}
