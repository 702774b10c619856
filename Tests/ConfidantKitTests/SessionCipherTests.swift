import ConfidantCrypto
import Foundation
import Testing

@testable import ConfidantKit

/// The protocol's decisions without a relay or a database: two devices with in-memory stores.
@Suite("Session cipher with in-memory stores")
struct SessionCipherTests {
    /// One device: its identity, its user, its stores and its cipher.
    struct Device {
        let user: UUID
        let identity: PrivateIdentity
        let store: InMemoryProtocolStore
        var cipher: SessionCipher { SessionCipher(identity: identity, userID: user) }
        var recipient: SessionCipher.Recipient { .init(user: user, identity: identity.publicIdentity) }

        init(prekeys: Bool = true) throws {
            user = UUID()
            identity = try PrivateIdentity.generate()
            store = InMemoryProtocolStore(prekeys: prekeys ? try DevicePrekeys.generate() : nil)
        }

        /// The bundle the relay would hand out for this device.
        func bundle(oneTime: Bool = true) throws -> SessionCipher.Bundle {
            guard let prekeys = store.devicePrekeys() else { return .noPrekeys }
            let upload = try prekeys.upload(signedBy: identity, oneTimePrekeys: prekeys.allOneTimePrekeys)
            return .prekeys(
                PrekeyBundle(
                    deviceID: identity.deviceID, signedPrekey: upload.signedPrekey, kemPrekey: upload.kemPrekey,
                    oneTimePrekey: oneTime ? upload.oneTimePrekeys.first : nil))
        }

        func knows(_ other: Device) { store.learn(other.identity.publicIdentity, of: other.user) }

        func seal(_ text: String, to peer: Device, bundle: SessionCipher.Bundle? = nil, id: UUID = UUID()) throws
            -> WireEnvelope
        {
            let bundles = bundle.map { [peer.recipient.address: $0] } ?? [:]
            let sealed = try cipher.seal(
                Data(text.utf8), messageID: id, sentAt: Date(), for: [peer.recipient], bundles: bundles, sessions: store
            )
            return try WireEnvelope(serialized: sealed[0])
        }

        func open(_ wire: WireEnvelope, from sender: Device, storedAt: Date = Date()) throws -> Result<
            String, SessionCipher.OpenFailure
        > {
            try cipher.open(
                wire, from: sender.user, storedAt: storedAt, identities: store, sessions: store, prekeys: store
            ).map {
                String(decoding: $0, as: UTF8.self)
            }
        }
    }

    @Test("the first message starts a session from the bundle and uses up the one-time prekey; replies need no bundle")
    func sessionStart() throws {
        let alice = try Device()
        let bob = try Device()
        alice.knows(bob)
        bob.knows(alice)
        #expect(try alice.cipher.needsBundle(bob.recipient, sessions: alice.store))
        let first = try alice.seal("hello Bob", to: bob, bundle: try bob.bundle())
        #expect(first.version == 2)
        #expect(!(try alice.cipher.needsBundle(bob.recipient, sessions: alice.store)))
        let oneTimeBefore = try #require(bob.store.devicePrekeys()).oneTimeCount
        #expect(try bob.open(first, from: alice) == .success("hello Bob"))
        #expect(try #require(bob.store.devicePrekeys()).oneTimeCount == oneTimeBefore - 1)
        // Bob answers in the session Alice started; Alice opens and both ratchet on.
        #expect(!(try bob.cipher.needsBundle(alice.recipient, sessions: bob.store)))
        let reply = try bob.seal("hi Alice", to: alice)
        #expect(try alice.open(reply, from: bob) == .success("hi Alice"))
        let again = try alice.seal("second", to: bob)
        #expect(try bob.open(again, from: alice) == .success("second"))
        // The same envelope a second time is refused and changes nothing.
        guard case .failure(let replay) = try bob.open(again, from: alice) else {
            Issue.record("a replay opened")
            return
        }
        #expect(replay.reason.contains("already received"))
    }

    /// A prekey store that counts its reads.
    final class CountingPrekeys: PrekeyStore, @unchecked Sendable {
        let inner: InMemoryProtocolStore
        var reads = 0
        init(_ inner: InMemoryProtocolStore) { self.inner = inner }
        func devicePrekeys() -> DevicePrekeys? {
            reads += 1
            return inner.devicePrekeys()
        }
        func storeDevicePrekeys(_ prekeys: DevicePrekeys) { inner.storeDevicePrekeys(prekeys) }
    }

    @Test("only a new start reads the device's prekeys; messages of a running session open without them")
    func prekeysReadOnlyForAStart() throws {
        let alice = try Device()
        let bob = try Device()
        alice.knows(bob)
        bob.knows(alice)
        let prekeys = CountingPrekeys(bob.store)
        func open(_ wire: WireEnvelope) throws -> Result<Data, SessionCipher.OpenFailure> {
            try bob.cipher.open(
                wire, from: alice.user, storedAt: Date(), identities: bob.store, sessions: bob.store, prekeys: prekeys)
        }
        let oneTimeBefore = try #require(bob.store.devicePrekeys()).oneTimeCount
        #expect(try open(try alice.seal("first", to: bob, bundle: try bob.bundle())) == .success(Data("first".utf8)))
        #expect(prekeys.reads == 1)
        #expect(try #require(bob.store.devicePrekeys()).oneTimeCount == oneTimeBefore - 1)
        // Still carrying the start (Bob has not answered), then after an answer: no reads.
        #expect(try open(try alice.seal("second", to: bob)) == .success(Data("second".utf8)))
        #expect(try alice.open(try bob.seal("hi", to: alice), from: bob) == .success("hi"))
        #expect(try open(try alice.seal("third", to: bob)) == .success(Data("third".utf8)))
        #expect(prekeys.reads == 1)
        #expect(try #require(bob.store.devicePrekeys()).oneTimeCount == oneTimeBefore - 1, "nothing else used up")
    }

    @Test("a device without prekeys gets a v1 envelope, and still reads it")
    func versionOneFallback() throws {
        let alice = try Device()
        let bob = try Device(prekeys: false)
        alice.knows(bob)
        bob.knows(alice)
        let sealed = try alice.seal("one-shot", to: bob, bundle: .noPrekeys)
        #expect(sealed.version == 1)
        #expect(try bob.open(sealed, from: alice) == .success("one-shot"))
        // No session was started: the next message needs a bundle again.
        #expect(try alice.cipher.needsBundle(bob.recipient, sessions: alice.store))
    }

    @Test("sealing refuses a missing bundle and a bundle the device did not sign, and stores no session")
    func refusedBundles() throws {
        let alice = try Device()
        let bob = try Device()
        let mallory = try Device()
        #expect(throws: SessionCipher.SealError.missingBundle(bob.recipient.address)) { try alice.seal("x", to: bob) }
        // Mallory's prekeys offered as Bob's: they are signed by another identity.
        guard case .prekeys(let forged) = try mallory.bundle() else {
            Issue.record("no bundle")
            return
        }
        let swapped = PrekeyBundle(
            deviceID: bob.identity.deviceID, signedPrekey: forged.signedPrekey, kemPrekey: forged.kemPrekey,
            oneTimePrekey: forged.oneTimePrekey)
        #expect(throws: SessionCipher.SealError.self) { try alice.seal("x", to: bob, bundle: .prekeys(swapped)) }
        #expect(try alice.cipher.needsBundle(bob.recipient, sessions: alice.store))
    }

    @Test("opening: an unknown sending device, a sender the relay does not report, another device's envelope")
    func unreadable() throws {
        let alice = try Device()
        let bob = try Device()
        let carol = try Device()
        alice.knows(bob)
        let sealed = try alice.seal("for Bob", to: bob, bundle: try bob.bundle())
        #expect(try bob.open(sealed, from: alice) == .failure(.init(reason: "the sending device's key is unknown")))
        bob.knows(alice)
        #expect(
            try bob.open(sealed, from: carol)
                == .failure(.init(reason: "the envelope names another sender than the server reports")))
        carol.knows(alice)
        guard case .failure = try carol.open(sealed, from: alice) else {
            Issue.record("Carol opened Bob's envelope")
            return
        }
        #expect(try bob.open(sealed, from: alice) == .success("for Bob"))
    }

    @Test(
        "a retired key opens only what the relay stored before it was retired, in sessions and v1 envelopes alike")
    func retiredKeys() throws {
        let alice = try Device()
        let bob = try Device()
        let carol = try Device(prekeys: false)
        alice.knows(bob)
        alice.knows(carol)
        bob.knows(alice)
        carol.knows(alice)
        let retiredAt = Date(timeIntervalSince1970: 2_000_000_000)
        let before = retiredAt.addingTimeInterval(-1)
        let after = retiredAt.addingTimeInterval(1)
        let first = try alice.seal("before removal", to: bob, bundle: try bob.bundle())
        let second = try alice.seal("after removal", to: bob)
        let oneShot = try alice.seal("v1 after removal", to: carol, bundle: .noPrekeys)
        let aliceDevice = DeviceAddress(userID: alice.user, deviceID: alice.identity.deviceID)
        bob.store.retire(aliceDevice, at: retiredAt)
        carol.store.retire(aliceDevice, at: retiredAt)
        #expect(try bob.open(first, from: alice, storedAt: before) == .success("before removal"))
        guard case .failure(let refused) = try bob.open(second, from: alice, storedAt: after) else {
            Issue.record("a retired key's new envelope opened")
            return
        }
        #expect(refused.reason.contains("retired"))
        guard case .failure(let refusedV1) = try carol.open(oneShot, from: alice, storedAt: after) else {
            Issue.record("a retired key's v1 envelope opened")
            return
        }
        #expect(refusedV1.reason.contains("retired"))
        #expect(try carol.open(oneShot, from: alice, storedAt: before) == .success("v1 after removal"))
    }

    @Test(
        "a key update: nothing to report the first time; then added, replaced and removed devices, and ended sessions")
    func keyUpdates() throws {
        let user = UUID()
        let phone = try PrivateIdentity.generate().publicIdentity
        let tablet = try PrivateIdentity.generate().publicIdentity
        let first = KeyUpdate(user: user, known: [], seenBefore: false, current: [phone])
        #expect(first.add == [phone] && first.changes.isEmpty && first.retire.isEmpty)
        let known = [KeyUpdate.Known(deviceID: phone.deviceID, fingerprint: IdentityFingerprint(phone).description)]
        #expect(
            KeyUpdate(user: user, known: known, seenBefore: true, current: [phone])
                == KeyUpdate(user: user, known: known, seenBefore: true, current: [phone]))
        #expect(KeyUpdate(user: user, known: known, seenBefore: true, current: [phone]).changes.isEmpty)
        let added = KeyUpdate(user: user, known: known, seenBefore: true, current: [phone, tablet])
        #expect(added.changes.map(\.kind) == [.added] && added.add == [tablet] && added.endSessions.isEmpty)
        let reinstalled = try PrivateIdentity.generate(deviceID: phone.deviceID).publicIdentity
        let replaced = KeyUpdate(user: user, known: known, seenBefore: true, current: [reinstalled])
        #expect(
            replaced.changes.map(\.kind) == [.replaced] && replaced.endSessions == [phone.deviceID]
                && replaced.retire == known)
        let removed = KeyUpdate(user: user, known: known, seenBefore: true, current: [])
        #expect(removed.changes.map(\.kind) == [.removed] && removed.endSessions == [phone.deviceID])
    }

    @Test("retries back off exponentially with jitter, up to a ceiling")
    func retryBackoff() {
        var policy = RetryPolicy()
        policy.random = { _ in 1 }
        #expect((1...6).map { policy.delay(afterFailures: $0) } == [2, 4, 8, 16, 32, 64].map { Duration.seconds($0) })
        #expect(policy.delay(afterFailures: 40) == .seconds(300))
        policy.random = { $0.upperBound }
        #expect(policy.delay(afterFailures: 1) == .milliseconds(2400))
        let now = Date(timeIntervalSince1970: 1_000)
        #expect(policy.nextAttempt(after: 1, now: now) == Date(timeIntervalSince1970: 1_002.4))
    }
}
