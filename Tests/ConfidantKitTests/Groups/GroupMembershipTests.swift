import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantKit

/// Groups' membership through a real relay: signed changes over the pairwise sessions (payload
/// kind 7), a new member's history, refusals, and every device computing the same state.
@Suite("Group membership between messengers")
struct GroupMembershipTests {
    @Test(
        "an admin makes a group and adds a member who gets its history; a member cannot remove; a promoted admin renames; a leaver is gone on every device"
    )
    func membership() async throws {
        try await TestRelay.run { relay in
            try await KitUser.removing(try await KitUser.register(relay, name: "Alice")) { alice in
                try await KitUser.removing(try await KitUser.register(relay, name: "Bob")) { bob in
                    try await KitUser.removing(try await KitUser.register(relay, name: "Carol")) { carol in
                        let (a, b, c) = (alice.messenger, bob.messenger, carol.messenger)
                        let (aliceID, bobID, carolID) = (await a.me, await b.me, await c.me)
                        let made = try await a.createGroup(name: "Family", members: [await bob.contact])
                        #expect(made.members == [aliceID, bobID] && made.admins == [aliceID])
                        _ = try await b.sync()
                        #expect(try await b.groups().map(\.name) == ["Family"])

                        // Carol joins later: she gets the creation and the addition, and every
                        // device agrees on the state.
                        let added = try await a.addToGroup(made.groupID, [await carol.contact])
                        _ = try await b.sync()
                        _ = try await c.sync()
                        let states = [
                            try await a.group(made.groupID).state, try await b.group(made.groupID).state,
                            try await c.group(made.groupID).state,
                        ]
                        #expect(states.allSatisfy { $0 == added })
                        #expect(added.members == [aliceID, bobID, carolID] && added.version == 2)

                        // Bob is no admin: his own device refuses his removal of Carol.
                        await #expect(throws: GroupChangeMakingError.refused(.authorNotAdmin)) {
                            try await b.removeFromGroup(made.groupID, [carolID])
                        }
                        try await a.setGroupAdmin(made.groupID, bobID, admin: true)
                        _ = try await b.sync()
                        let renamed = try await b.renameGroup(made.groupID, to: "The family")
                        #expect(renamed.admins == [aliceID, bobID])
                        // Carol leaves before her device has seen the rename: the two changes
                        // branch, and every device resolves them alike.
                        try await c.leaveGroup(made.groupID)
                        for messenger in [a, b, c] { _ = try await messenger.sync() }
                        for messenger in [a, b, c] {
                            let state = try await messenger.group(made.groupID).state
                            #expect(state.name == "The family" && state.members == [aliceID, bobID])
                            #expect(state.version == 5 && state.admins == [aliceID, bobID])
                        }
                        let heads = [
                            try await a.group(made.groupID).state.head, try await b.group(made.groupID).state.head,
                            try await c.group(made.groupID).state.head,
                        ]
                        #expect(Set(heads).count == 1, "every device ends on the same change")

                        // Bob adds Dave, who has never heard of Alice: her changes in the history
                        // wait for her key history, fetched after the sync, and then apply.
                        try await KitUser.removing(try await KitUser.register(relay, name: "Dave")) { dave in
                            let joined = try await b.addToGroup(made.groupID, [await dave.contact])
                            _ = try await dave.messenger.sync()
                            #expect(try await dave.messenger.group(made.groupID).state == joined)
                            #expect(try dave.messenger.store.unverifiedGroupChanges().isEmpty)
                            #expect(try await dave.messenger.knownContact(aliceID) == nil, "Alice is no contact of his")
                        }
                    }
                }
            }
        }
    }

    @Test(
        "a change someone forged in an admin's name, or for another group, is dropped; a replayed one changes nothing")
    func forgedAndReplayed() async throws {
        try await TestRelay.run { relay in
            try await KitUser.pair(relay) { alice, bob in
                let group = try await alice.messenger.createGroup(name: "Pair", members: [await bob.contact])
                _ = try await bob.messenger.sync()
                let store = bob.messenger.store
                let ledger = try #require(try store.groupLedger(group.groupID))
                let aliceID = await alice.messenger.me
                let own = SessionCipher.Recipient(
                    user: await bob.messenger.me, identity: bob.messenger.identity.publicIdentity)
                // Bob's device signs a rename in Alice's name, first as from his own device id,
                // then with her device id written over his: no key of hers checks either.
                let signedByBob = try ledger.makeChange(
                    .rename("Forged"), author: aliceID, identity: bob.messenger.identity)
                var relabelled = [UInt8](signedByBob.serialized)
                relabelled.replaceSubrange(
                    85..<101, with: withUnsafeBytes(of: alice.messenger.identity.deviceID.uuid) { Array($0) })
                for forged in [signedByBob.serialized, Data(relabelled)] {
                    let outcome = try store.write { db in
                        try store.receiveGroupChange(forged, group: group.groupID, own: own, now: Date(), db)
                    }
                    #expect(outcome == .awaitingKey(author: aliceID), "no key this device knows checks it")
                }
                let gained = try store.verifyWaitingGroupChanges(
                    own: own, histories: [aliceID: [alice.messenger.identity.publicIdentity]])
                #expect(gained.isEmpty)
                #expect(try store.unverifiedGroupChanges().isEmpty, "her key history refuses both: dropped")
                let creation = try #require(ledger.changes.first)
                let replay = try store.write { db in
                    try store.receiveGroupChange(creation.serialized, group: group.groupID, own: own, now: Date(), db)
                }
                #expect(replay == .duplicate)
                let elsewhere = try store.write { db in
                    try store.receiveGroupChange(creation.serialized, group: UUID(), own: own, now: Date(), db)
                }
                #expect(elsewhere == .dropped)
                #expect(try store.groupLedger(group.groupID)?.state == group)
            }
        }
    }
}
