import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantKit

/// Control messages from an account with two devices: the relay takes a message only when it
/// also reaches the sender's other devices, so every control goes there too and none is held
/// for ever.
@Suite("Control messages from an account with several devices")
struct MultiDeviceControlTests {
    @Test(
        "bob's second device does not hold his receipts back: alice sees her messages delivered, in a chat and a group")
    func receiptsLeave() async throws {
        try await TestRelay.run { relay in
            try await KitUser.removing(try await KitUser.register(relay, name: "Alice")) { alice in
                try await KitUser.removing(try await KitUser.register(relay, name: "Bob")) { bob in
                    let (a, b) = (alice.messenger, bob.messenger)
                    let laptop = try await bob.secondDevice(relay)
                    let bobContact = await bob.contact
                    let direct = try await a.send("hi", to: bobContact)
                    let group = try await a.createGroup(name: "Duo", members: [bobContact]).groupID
                    let sent = try await a.sendToGroup(group, text: "hello")
                    _ = try await b.sync()
                    #expect(try b.store.controls().isEmpty, "no receipt waits on bob's web device")
                    _ = try await a.sync()
                    let line = try await a.history(with: bobContact.id).first { $0.id == direct.id }
                    #expect(line?.status == .delivered)
                    let receipts = try await a.groupHistory(group).first { $0.id == sent.id }?.groupReceipts
                    #expect(receipts == GroupReceipts(delivered: 1, read: 0, members: 1))
                    await laptop.remove()
                }
            }
        }
    }

    @Test("an admin with a second device reaches every member with the group's changes, not only the first")
    func groupChangesLeave() async throws {
        try await TestRelay.run { relay in
            try await KitUser.removing(try await KitUser.register(relay, name: "Alice")) { alice in
                try await KitUser.removing(try await KitUser.register(relay, name: "Bob")) { bob in
                    try await KitUser.removing(try await KitUser.register(relay, name: "Carol")) { carol in
                        try await KitUser.removing(try await KitUser.register(relay, name: "Dave")) { dave in
                            let laptop = try await alice.secondDevice(relay)
                            let a = alice.messenger
                            let (bobContact, carolContact, daveContact) = (
                                await bob.contact, await carol.contact, await dave.contact
                            )
                            let group = try await a.createGroup(name: "Team", members: [bobContact, carolContact])
                            _ = try await a.addToGroup(group.groupID, [daveContact])
                            _ = try await a.renameGroup(group.groupID, to: "Team 2")
                            #expect(try a.store.controls().isEmpty, "no change waits on alice's laptop")
                            for member in [bob, carol, dave, laptop] {
                                _ = try await member.messenger.sync()
                                let state = try await member.messenger.group(group.groupID).state
                                #expect(state.name == "Team 2")
                                #expect(state.members.count == 4)
                            }
                            await laptop.remove()
                        }
                    }
                }
            }
        }
    }
}
