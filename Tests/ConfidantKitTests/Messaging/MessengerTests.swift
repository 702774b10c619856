import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Synchronization
import Testing

@testable import ConfidantKit

@Suite("Messenger against a real relay")
struct MessengerTests {
    @Test("texts of every size arrive in order, decrypted, and the conversation lists them")
    func sendAndSync() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email.uppercased())
            let texts = ["Привет 👋 مرحبا", "x", String(repeating: "é", count: ChatPayload.maximumTextBytes / 2)]
            for text in texts {
                #expect(try await alice.messenger.send(text, to: toBob).status == .sent)
            }
            let received = try await bob.messenger.sync()
            #expect(received.map(\.text) == texts)
            #expect(received.allSatisfy { $0.direction == .incoming && $0.status == .received })
            let conversations = try await bob.messenger.conversations()
            #expect(conversations.count == 1)
            #expect(conversations.first?.peer.email == alice.email)
            #expect(conversations.first?.unread == 3)
            try await bob.messenger.markRead(conversations[0].peer.id)
            #expect(try await bob.messenger.conversations().first?.unread == 0)
            // A second sync finds nothing new: everything was acknowledged.
            #expect(try await bob.messenger.sync().isEmpty)
            await #expect(
                throws: ConfidantKitError.messageTooLarge(
                    bytes: ChatPayload.maximumTextBytes + 1, limit: ChatPayload.maximumTextBytes)
            ) {
                try await alice.messenger.send(
                    String(repeating: "a", count: ChatPayload.maximumTextBytes + 1), to: toBob)
            }
            await #expect(throws: ConfidantKitError.emptyMessage) { try await alice.messenger.send("", to: toBob) }
            await #expect(throws: ConfidantKitError.unknownUser("nobody@example.com")) {
                try await alice.messenger.contact(email: "nobody@example.com")
            }
        }
    }

    @Test("the sender's other device gets a copy in the right conversation")
    func ownDevices() async throws {
        try await TestRelay.run { relay in
            let alice = try await KitUser.register(relay, name: "Alice")
            let bob = try await KitUser.register(relay, name: "Bob")
            let aliceTablet = try await alice.secondDevice(relay)
            defer {
                Task {
                    await alice.remove()
                    await bob.remove()
                    await aliceTablet.remove()
                }
            }
            _ = try await alice.messenger.send("from the phone", to: alice.messenger.contact(email: bob.email))
            let copies = try await aliceTablet.messenger.sync()
            let bobID = await bob.messenger.me
            #expect(copies.map(\.text) == ["from the phone"])
            #expect(copies.first?.direction == .outgoing)
            #expect(copies.first?.peer == bobID)
        }
    }

    @Test("keys fetched for sending serve for a minute; a device added meanwhile still gets the next message")
    func keysForSending() async throws {
        try await TestRelay.run { relay in
            let alice = try await KitUser.register(relay, name: "Alice")
            let bob = try await KitUser.register(relay, name: "Bob")
            let bobID = await bob.messenger.me
            let shared = await alice.messenger.directory
            let clock = LockedDate(Date())
            let directory = KeyDirectory(
                relay: shared.relay, store: shared.store, identity: shared.identity, me: shared.me,
                events: shared.events, now: { clock.value })
            #expect(try await directory.keysForSending(of: bobID).count == 1)

            let tablet = try await bob.secondDevice(relay)
            defer {
                Task {
                    await alice.remove()
                    await bob.remove()
                    await tablet.remove()
                }
            }
            clock.advance(by: KeyDirectory.keysFreshFor - 1)
            #expect(try await directory.keysForSending(of: bobID).count == 1, "not asked again within the minute")
            clock.advance(by: 2)
            #expect(try await directory.keysForSending(of: bobID).count == 2)

            // The messenger's own directory fetched Bob's one device before the tablet signed in;
            // the relay refuses that list and the message goes to both.
            let contact = try await alice.messenger.contact(email: bob.email)
            _ = try await alice.messenger.send("before", to: contact)
            try await KitUser.removing(try await bob.secondDevice(relay)) { third in
                let sent = try await alice.messenger.send("after", to: contact)
                #expect(sent.status == .sent)
                #expect(try await third.messenger.sync().map(\.text) == ["after"])
            }
        }
    }

    @Test("a new device key: peers get the warning, old messages are unreadable placeholders, new ones arrive")
    func keyChange() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email)
            _ = try await alice.messenger.send("sealed for the old key", to: toBob)
            try await alice.messenger.markVerified(toBob)
            // Bob reinstalls: same device id, new key.
            let reinstalled = try await Messenger.login(
                bob.profile.storage, passphrase: TestProfile.passphrase, email: bob.email,
                password: bob.password, newDeviceKey: true, answer: KitUser.mailedCode(relay, email: bob.email))
            #expect(reinstalled.identity.deviceID == bob.messenger.identity.deviceID)
            let old = try await reinstalled.sync()
            #expect(old.count == 1)
            #expect(old.first?.text == nil)
            #expect(
                old.first?.displayText.hasPrefix(
                    "[unreadable message: it was sealed for a key this device no longer has") == true)
            // Alice learns of the change from her mailbox and sees the tunnel-concept warning.
            _ = try await alice.messenger.sync()
            let summary = try #require(try await alice.messenger.conversations().first)
            #expect(
                summary.keyChangeWarning
                    == "Bob's security key changed — messages sent to the old device can't be read there")
            let warning = try #require(try await alice.messenger.history(with: toBob.id).last)
            #expect(warning.noticeKind == .keyChange && warning.warnsOfKeyChange)
            #expect(try await alice.messenger.verificationState(of: toBob.id) == .changedSinceVerification)
            // Bob was verified: sending asks first, then a confirmed send goes and later ones do not ask.
            await #expect(throws: ConfidantKitError.keyChangedSinceVerification(name: "Bob")) {
                try await alice.messenger.send("new key?", to: toBob)
            }
            #expect(try await alice.messenger.send("confirmed", to: toBob, confirmKeyChange: true).status == .sent)
            #expect(try await alice.messenger.send("and again", to: toBob).status == .sent)
            let afterChange = try await reinstalled.sync()
            #expect(afterChange.map(\.text) == ["confirmed", "and again"])
            // The session with the old key ended with it; these came in a new one, bound to the new key.
            #expect(afterChange.allSatisfy { $0.envelopeVersion == 2 })
            let bobDevice = reinstalled.identity.deviceID
            let bobID = await reinstalled.me
            let oldKey = IdentityFingerprint(bob.messenger.identity.publicIdentity).description
            let newKey = IdentityFingerprint(reinstalled.identity.publicIdentity).description
            #expect(
                try alice.messenger.store.session(
                    with: DeviceAddress(userID: bobID, deviceID: bobDevice), fingerprint: oldKey) == nil)
            #expect(
                try alice.messenger.store.session(
                    with: DeviceAddress(userID: bobID, deviceID: bobDevice), fingerprint: newKey) != nil)
            #expect(try await alice.messenger.verification(of: toBob).state == .unverified)
        }
    }

    @Test("the live stream delivers while connected and acknowledges what it stored")
    func live() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let events = await bob.messenger.events()
            #expect(await bob.messenger.goLive())
            _ = try await alice.messenger.send("live one", to: alice.messenger.contact(email: bob.email))
            let event = await events.first { if case .message = $0 { true } else { false } }
            guard case .message(let message)? = event else {
                Issue.record("no live message")
                return
            }
            #expect(message.text == "live one")
            await bob.messenger.stopLive()
            // Acknowledged over the stream: a sync finds nothing more.
            #expect(try await bob.messenger.sync().isEmpty)
        }
    }

    @Test("removing a device from another signs it out: its live connection ends as signedOut and stays down")
    func removedDeviceSignedOut() async throws {
        try await TestRelay.run { relay in
            let laptop = try await KitUser.register(relay, name: "Alice")
            let phone = try await laptop.secondDevice(relay)
            defer {
                Task {
                    await laptop.remove()
                    await phone.remove()
                }
            }
            let events = await phone.messenger.events()
            #expect(await phone.messenger.goLive())
            await #expect(throws: ConfidantKitError.cannotRemoveThisDevice) {
                try await laptop.messenger.removeDevice(laptop.messenger.identity.deviceID)
            }
            #expect(try await laptop.messenger.devices().count == 2)
            try await laptop.messenger.removeDevice(phone.messenger.identity.deviceID)
            #expect(await events.first { if case .connection(.signedOut) = $0 { true } else { false } } != nil)
            #expect(await phone.messenger.connection == .signedOut)
            #expect(try await laptop.messenger.devices().map(\.deviceID) == [laptop.messenger.identity.deviceID])
            // The phone's retired key is kept for what it sent before, marked retired.
            let keys = try await laptop.messenger.knownKeys(of: laptop.messenger.me)
            #expect(keys.contains { $0.deviceID == phone.messenger.identity.deviceID && $0.retiredAt != nil })
        }
    }

    @Test(
        "a device proof that reaches the relay too late closes the stream (4408): the device connects again, still signed in"
    )
    func lateProofRetried() async throws {
        // A limit of 0 s: the relay's timer runs out before any answer can cross the network.
        try await TestRelay.run(adjust: { $0.streamProofSeconds = 0 }) { relay in
            try await KitUser.removing(try await KitUser.register(relay, name: "Alice")) { alice in
                let events = await alice.messenger.events()
                await alice.messenger.startLive()
                var waits: [String] = []
                for await event in events {
                    guard case .connection(let state) = event else { continue }
                    if case .signedOut = state { break }
                    if case .waiting(_, let reason) = state { waits.append(reason) }
                    if waits.count == 2 { break }
                }
                await alice.messenger.stopLive()
                #expect(waits.count == 2 && waits.allSatisfy { $0.contains("too late") }, "\(waits)")
                #expect(await alice.messenger.connection != .signedOut)
                _ = try await alice.messenger.devices()
            }
        }
    }

    @Test("a seed-legacy envelope from the relay is unreadable unless the profile turns seed compatibility on")
    func seedLegacyRefused() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let bobID = await bob.messenger.me
            let aliceToken = await alice.messenger.account.token
            #expect(aliceToken != nil)
            let aliceClient = relay.client(token: aliceToken)
            _ = try await alice.messenger.contact(email: bob.email)
            _ = try await bob.messenger.contact(email: alice.email)
            /// Posts `text` sealed in the seed's cipher, as a seed app (or anyone with Alice's token) could.
            func postSeedLegacy(_ text: String) async throws {
                let envelope = try SealedEnvelope.seal(
                    Data(text.utf8), from: alice.messenger.identity, senderUserID: await alice.messenger.me,
                    to: bob.messenger.identity.publicIdentity, recipientUserID: bobID, suite: .seedLegacy)
                _ = try await aliceClient.sendMessage(
                    body: .json(
                        .init(
                            messageId: envelope.header.messageID.uuidString,
                            envelopes: [
                                .init(
                                    recipientUserId: bobID.uuidString,
                                    recipientDeviceId: bob.messenger.identity.deviceID.uuidString,
                                    envelope: .init(envelope.serialized))
                            ]))
                ).ok
            }
            try await postSeedLegacy("no integrity")
            let refused = try #require(try await bob.messenger.sync().first)
            #expect(refused.text == nil)
            #expect(refused.unreadableReason?.contains("seed-legacy") == true)

            try await bob.messenger.setSeedCompatibility(true)
            let compatible = try Messenger.open(bob.profile.storage, passphrase: TestProfile.passphrase)
            try await postSeedLegacy("read for compatibility")
            #expect(try await compatible.sync().first?.unreadableReason == nil)
            let aliceID = await alice.messenger.me
            #expect(try await compatible.history(with: aliceID, limit: 5).last?.text == "read for compatibility")
        }
    }

    @Test("while connected, sends go over the stream; without the stream, over HTTP; both arrive once, in order")
    func sendsOverTheStream() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email)
            #expect(await alice.messenger.goLive())
            for index in 1...5 {
                #expect(try await alice.messenger.send("streamed \(index)", to: toBob).status == .sent)
            }
            #expect(alice.diagnostics.record.transports == Array(repeating: .stream, count: 5))
            await alice.messenger.stopLive()
            #expect(try await alice.messenger.send("posted", to: toBob).status == .sent)
            #expect(alice.diagnostics.record.transports.last == .http)
            #expect(try await bob.messenger.sync().map(\.text) == (1...5).map { "streamed \($0)" } + ["posted"])
        }
    }

    @Test("a send to someone with no device fails with the reason and goes on retry once they sign in")
    func failedAndRetry() async throws {
        try await TestRelay.run { relay in
            try await KitUser.removing(try await KitUser.register(relay, name: "Alice")) { alice in
                // Carol's account is real (its address proved) but none of her devices is signed in:
                // she signed her only one out from itself.
                try await KitUser.removing(try await KitUser.register(relay, name: "Carol")) { carolFirst in
                    let email = carolFirst.email
                    let carolToken = await carolFirst.messenger.account.token
                    _ = try await relay.client(token: carolToken).removeDevice(
                        path: .init(deviceId: carolFirst.messenger.identity.deviceID.canonicalString)
                    ).noContent
                    let carol = try await alice.messenger.contact(email: email)
                    let failed = try await alice.messenger.send("hello Carol", to: carol)
                    #expect(failed.status == .failed(.noRecipientDevice))
                    let profile = TestProfile()
                    defer { profile.remove() }
                    let carolDevice = try await Messenger.login(
                        profile.storage, passphrase: TestProfile.passphrase, server: relay.baseURL,
                        email: email, password: carolFirst.password, answer: KitUser.mailedCode(relay, email: email))
                    #expect(try await alice.messenger.retry(failed.id) == .sent)
                    await #expect(throws: ConfidantKitError.notRetryable(failed.id)) {
                        try await alice.messenger.retry(failed.id)
                    }
                    #expect(try await carolDevice.sync().map(\.text) == ["hello Carol"])
                }
            }
        }
    }

    @Test("an unreachable server queues the send; the outbox sends it exactly once later")
    func outbox() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email)
            // The same profile pointed at a port where nothing listens.
            let account = await alice.messenger.account
            var offline = account
            offline.serverURL = try ServerAddress.parse("http://127.0.0.1:9")
            try alice.messenger.store.saveAccount(offline)
            let away = try Messenger.open(alice.profile.storage, passphrase: TestProfile.passphrase)
            let queued = try await away.send("written offline", to: toBob)
            #expect(queued.status == .pending)
            await #expect(throws: ConfidantKitError.self) { try await away.sync() }
            try alice.messenger.store.saveAccount(account)
            let back = try Messenger.open(alice.profile.storage, passphrase: TestProfile.passphrase)
            #expect(try await back.flushOutbox() == 1)
            #expect(try await back.flushOutbox() == 0)
            #expect(try await back.history(with: toBob.id, limit: 5).last?.status == .sent)
            #expect(try await bob.messenger.sync().map(\.text) == ["written offline"])
        }
    }

    @Test("a signed-out profile says to log in; a profile keeps to its account")
    func sessions() async throws {
        try await TestRelay.run { relay in
            try await KitUser.removing(try await KitUser.register(relay, name: "Alice")) { alice in
                try await alice.messenger.logout()
                #expect(throws: ConfidantKitError.sessionExpired) {
                    try Messenger.open(alice.profile.storage, passphrase: TestProfile.passphrase)
                }
                await #expect(throws: ConfidantKitError.profileBelongsToOther(email: alice.email)) {
                    try await Messenger.login(
                        alice.profile.storage, passphrase: TestProfile.passphrase, server: relay.baseURL,
                        email: "someone-else@example.com", password: "whatever password")
                }
                await #expect(throws: IdentityKeyFileError.self) {
                    try await Messenger.login(
                        alice.profile.storage, passphrase: "wrong passphrase", email: alice.email,
                        password: alice.password)
                }
                let again = try await Messenger.login(
                    alice.profile.storage, passphrase: TestProfile.passphrase, email: alice.email,
                    password: alice.password)
                #expect(await again.account.token != nil)
                #expect(again.identity.deviceID == alice.messenger.identity.deviceID)
            }
        }
    }
}

/// A date a test moves by hand.
final class LockedDate: Sendable {
    private let date: Mutex<Date>

    init(_ date: Date) { self.date = Mutex(date) }

    var value: Date { date.withLock { $0 } }

    func advance(by seconds: TimeInterval) {
        date.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
