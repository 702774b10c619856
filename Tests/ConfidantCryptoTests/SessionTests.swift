import ConfidantAuth
import Crypto
import Foundation
import Testing

@testable import ConfidantCrypto

/// One device in a session test: its identity, its prekeys and its sessions with the other side.
struct SessionParty {
    let user: UUID
    let identity: PrivateIdentity
    var prekeys: DevicePrekeys
    var record = SessionRecord()

    init() throws {
        user = UUID()
        identity = try PrivateIdentity.generate()
        prekeys = try DevicePrekeys.generate()
    }

    /// The same device (user, identity) with other state, as an attacker with a copy would have it.
    init(copying party: SessionParty, prekeys: DevicePrekeys) {
        self.user = party.user
        self.identity = party.identity
        self.prekeys = prekeys
    }

    init(identity: PrivateIdentity, prekeys: DevicePrekeys) {
        self.user = UUID()
        self.identity = identity
        self.prekeys = prekeys
    }

    var publicIdentity: PublicIdentity { identity.publicIdentity }

    /// A bundle as the relay would hand it out, using the one-time prekey with the lowest id.
    func bundle(oneTime: Bool = true) throws -> PrekeyBundle {
        let upload = try prekeys.upload(signedBy: identity, oneTimePrekeys: prekeys.allOneTimePrekeys)
        return PrekeyBundle(
            deviceID: identity.deviceID, signedPrekey: upload.signedPrekey, kemPrekey: upload.kemPrekey,
            oneTimePrekey: oneTime ? upload.oneTimePrekeys.first : nil)
    }

    mutating func seal(_ text: String, to peer: SessionParty) throws -> RatchetEnvelope {
        if !record.canSeal { try record.start(from: identity, to: peer.publicIdentity, bundle: peer.bundle()) }
        return try record.seal(
            Data(text.utf8), from: identity, senderUserID: user, to: peer.publicIdentity, recipientUserID: peer.user)
    }

    mutating func open(_ envelope: RatchetEnvelope, from peer: SessionParty) throws(SessionError) -> String {
        let data = try record.open(
            envelope, as: identity, recipientUserID: user, from: peer.publicIdentity, prekeys: &prekeys)
        return String(decoding: data, as: UTF8.self)
    }
}

@Suite struct SessionTests {
    @Test func conversationBothWays() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        let oneTimeBefore = bob.prekeys.oneTimeCount
        let first = try alice.seal("hello Bob", to: bob)
        #expect(first.start != nil)
        #expect(first.start?.oneTimePrekeyID != nil)
        let parsed = try RatchetEnvelope(serialized: first.serialized)
        #expect(parsed == first)
        #expect(try bob.open(parsed, from: alice) == "hello Bob")
        #expect(bob.prekeys.oneTimeCount == oneTimeBefore - 1, "the used one-time prekey is erased")
        // Until Alice hears back, every message repeats the start.
        let second = try alice.seal("still there?", to: bob)
        #expect(second.start == first.start)
        #expect(try bob.open(second, from: alice) == "still there?")
        let reply = try bob.seal("hi Alice", to: alice)
        #expect(reply.start == nil)
        #expect(try alice.open(reply, from: bob) == "hi Alice")
        let third = try alice.seal("good", to: bob)
        #expect(third.start == nil, "the start stops once the responder answered")
        #expect(third.ratchetKey != first.ratchetKey, "a round trip moves the DH ratchet")
        #expect(try bob.open(third, from: alice) == "good")
        for round in 0..<20 {
            let a = try alice.seal("a\(round)", to: bob)
            #expect(try bob.open(a, from: alice) == "a\(round)")
            let b = try bob.seal("b\(round)", to: alice)
            #expect(try alice.open(b, from: bob) == "b\(round)")
        }
    }

    /// A responder reads its prekeys only for a start no session here began: a message that
    /// repeats a start it answered, or one of the running session, opens without them.
    @Test func onlyANewStartNeedsPrekeys() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        let first = try alice.seal("hello Bob", to: bob)
        #expect(bob.record.needsPrekeys(toOpen: first))
        #expect(try bob.open(first, from: alice) == "hello Bob")
        #expect(!bob.record.needsPrekeys(toOpen: first), "its session began with this start")
        let second = try alice.seal("still there?", to: bob)
        #expect(second.start != nil)
        #expect(!bob.record.needsPrekeys(toOpen: second))
        var none = DevicePrekeys.none
        let opened = try bob.record.open(
            second, as: bob.identity, recipientUserID: bob.user, from: alice.publicIdentity, prekeys: &none)
        #expect(String(decoding: opened, as: UTF8.self) == "still there?")
        _ = try alice.open(try bob.seal("hi Alice", to: alice), from: bob)
        let third = try alice.seal("good", to: bob)
        #expect(third.start == nil)
        #expect(!bob.record.needsPrekeys(toOpen: third))
        // A start opened without prekeys finds none and changes nothing.
        var carol = try SessionParty()
        let fresh = try carol.seal("hello", to: bob)
        var fromCarol = SessionRecord()
        #expect(fromCarol.needsPrekeys(toOpen: fresh))
        #expect(throws: SessionError.self) {
            try fromCarol.open(
                fresh, as: bob.identity, recipientUserID: bob.user, from: carol.publicIdentity, prekeys: &none)
        }
        #expect(fromCarol.needsPrekeys(toOpen: fresh))
        #expect(none.oneTimeCount == 0 && none.currentIDs == nil)
    }

    @Test func startWithoutOneTimePrekey() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        try alice.record.start(from: alice.identity, to: bob.publicIdentity, bundle: bob.bundle(oneTime: false))
        let envelope = try alice.seal("no one-time key", to: bob)
        #expect(envelope.start?.oneTimePrekeyID == nil)
        #expect(try bob.open(envelope, from: alice) == "no one-time key")
        #expect(bob.prekeys.oneTimeCount == DevicePrekeys.batchSize)
    }

    @Test func outOfOrderLossAndDuplicates() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        #expect(try bob.open(alice.seal("start", to: bob), from: alice) == "start")
        #expect(try alice.open(bob.seal("ok", to: alice), from: bob) == "ok")
        let batch = try (0..<30).map { try alice.seal("m\($0)", to: bob) }
        // Deliver in a shuffled order, lose every fifth message.
        var generator = SeededRandomNumberGenerator(seed: 7)
        let delivered = Array(batch.enumerated()).filter { $0.offset % 5 != 4 }.shuffled(using: &generator)
        for (index, envelope) in delivered { #expect(try bob.open(envelope, from: alice) == "m\(index)") }
        // m29 was the last one sent: nothing tells Bob it exists yet.
        #expect(bob.record.sessions[0].skippedKeyCount == 5, "keys for the other five lost messages are kept")
        // Every message again: each is refused as a duplicate and leaves the state alone.
        for (_, envelope) in delivered {
            #expect(throws: SessionError.duplicate) { try bob.open(envelope, from: alice) }
        }
        // A late "lost" message still opens; a DH step later, old-chain leftovers do too.
        #expect(try bob.open(batch[4], from: alice) == "m4")
        #expect(try alice.open(bob.seal("next round", to: alice), from: bob) == "next round")
        let newChain = try alice.seal("new chain", to: bob)
        #expect(try bob.open(newChain, from: alice) == "new chain")
        #expect(try bob.open(batch[9], from: alice) == "m9")
        #expect(throws: SessionError.duplicate) { try bob.open(batch[9], from: alice) }
        #expect(throws: SessionError.duplicate) { try bob.open(newChain, from: alice) }
        #expect(bob.record.sessions[0].skippedKeyCount == 4)
    }

    @Test func messagesFromAnEarlierChainArriveAfterTheRatchetMoved() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        let a1 = try alice.seal("a1", to: bob)
        let a2 = try alice.seal("a2", to: bob)
        #expect(try bob.open(a1, from: alice) == "a1")
        #expect(try alice.open(bob.seal("b1", to: alice), from: bob) == "b1")
        let a3 = try alice.seal("a3", to: bob)  // new chain; says the previous one had 2 messages
        #expect(a3.previousChainLength == 2)
        #expect(try bob.open(a3, from: alice) == "a3")
        #expect(try bob.open(a2, from: alice) == "a2")
    }

    @Test func skippedKeysAreBounded() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        #expect(try bob.open(alice.seal("start", to: bob), from: alice) == "start")
        // Alice's "start" was message 0; these are messages 1...1002 of the same chain.
        let batch = try (0...(RatchetSession.maximumSkip + 1)).map { try alice.seal("m\($0)", to: bob) }
        // Message 1002 would skip 1,001 messages: refused, state unchanged.
        #expect(throws: SessionError.tooManySkipped(RatchetSession.maximumSkip + 1)) {
            try bob.open(batch[1001], from: alice)
        }
        #expect(bob.record.sessions[0].skippedKeyCount == 0)
        // A gap of 999 is fine; the next gap pushes the store past 1,000 and the oldest keys go.
        #expect(try bob.open(batch[999], from: alice) == "m999")
        #expect(bob.record.sessions[0].skippedKeyCount == 999)
        let later = try (0..<3).map { try alice.seal("later \($0)", to: bob) }  // messages 1003...1005
        #expect(try bob.open(later[2], from: alice) == "later 2")
        #expect(bob.record.sessions[0].skippedKeyCount == RatchetSession.maximumSkip)
        for evicted in batch[0..<3] {
            #expect(throws: SessionError.duplicate) { try bob.open(evicted, from: alice) }
        }
        #expect(try bob.open(batch[3], from: alice) == "m3")
        #expect(try bob.open(batch[1001], from: alice) == "m1001")
    }

    @Test func tamperedAndMisdirectedMessagesChangeNothing() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        var carol = try SessionParty()
        let envelope = try alice.seal("for Bob", to: bob)
        var bytes = Array(envelope.serialized)
        for index in [1 + 16, 100, 91 + 1164 + 2, bytes.count - 1] {  // sender id, start, ratchet key, tag
            var altered = bytes
            altered[index] ^= 0x01
            guard let parsed = try? RatchetEnvelope(serialized: altered) else { continue }
            #expect(throws: SessionError.self) { try bob.open(parsed, from: alice) }
        }
        #expect(bob.record.sessions.isEmpty)
        #expect(bob.prekeys.oneTimeCount == DevicePrekeys.batchSize, "a failed start does not use up a one-time prekey")
        // Opened as from Carol (another identity for the same device id is impossible; use a copy addressed wrongly).
        #expect(throws: SessionError.self) { try carol.open(envelope, from: alice) }
        #expect(try bob.open(envelope, from: alice) == "for Bob")
        bytes = Array(try alice.seal("second", to: bob).serialized)
        bytes[bytes.count - 20] ^= 0x80
        #expect(throws: SessionError.tampered) { try bob.open(RatchetEnvelope(serialized: bytes), from: alice) }
    }

    @Test func replayedStartAfterItsOneTimeKeyIsGone() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        let first = try alice.seal("hello", to: bob)
        #expect(try bob.open(first, from: alice) == "hello")
        var fresh = SessionParty(copying: bob, prekeys: bob.prekeys)  // Bob without his session
        #expect(throws: SessionError.unknownPrekey("one-time prekey \(first.start?.oneTimePrekeyID ?? 0)")) {
            try fresh.open(first, from: alice)
        }
    }

    @Test func simultaneousStartsConverge() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        let fromAlice = try alice.seal("hi, I start", to: bob)
        let fromBob = try bob.seal("no, I start", to: alice)
        #expect(try bob.open(fromAlice, from: alice) == "hi, I start")
        #expect(try alice.open(fromBob, from: bob) == "no, I start")
        // Each now uses the other's session; messages still open, and the two settle on one.
        for round in 0..<3 {
            #expect(try bob.open(alice.seal("a\(round)", to: bob), from: alice) == "a\(round)")
            #expect(try alice.open(bob.seal("b\(round)", to: alice), from: bob) == "b\(round)")
        }
        #expect(alice.record.sessions[0].baseKey == bob.record.sessions[0].baseKey)
    }

    /// Forward secrecy: the state as it is stored after the ratchet moved cannot open earlier messages.
    @Test func storedStateCannotOpenEarlierMessages() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        var sent: [RatchetEnvelope] = []
        for round in 0..<3 {
            let envelope = try alice.seal("secret \(round)", to: bob)
            sent.append(envelope)
            #expect(try bob.open(envelope, from: alice) == "secret \(round)")
            #expect(try alice.open(bob.seal("ack \(round)", to: alice), from: bob) == "ack \(round)")
        }
        // What an attacker finds on Bob's disk now: the record and the prekeys.
        let stolenRecord = bob.record.serialized
        let stolenPrekeys = bob.prekeys.serialized
        for envelope in sent {
            var thief = SessionParty(copying: bob, prekeys: try DevicePrekeys(serialized: stolenPrekeys))
            thief.record = try SessionRecord(serialized: stolenRecord)
            #expect(throws: SessionError.self) { try thief.open(envelope, from: alice) }
        }
        // The message keys are not in the stored bytes either.
        let stored = Array(stolenRecord)
        for envelope in sent {
            #expect(!stored.containsSubsequence(Array(envelope.ciphertext.prefix(16))))
        }
    }

    /// Post-compromise security: with a copy of Bob's state, a passive attacker reads along only
    /// until Bob's next DH ratchet step.
    @Test func recoversAfterADHRatchetStep() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        #expect(try bob.open(alice.seal("start", to: bob), from: alice) == "start")
        var eve = SessionParty(copying: bob, prekeys: bob.prekeys)
        eve.record = try SessionRecord(serialized: bob.record.serialized)
        // Compromised: Eve reads what follows in the chains she copied.
        let leaked = try alice.seal("still leaked", to: bob)
        #expect(try bob.open(leaked, from: alice) == "still leaked")
        #expect(try eve.open(leaked, from: alice) == "still leaked")
        // Bob answers from his new ratchet key, Alice answers with a fresh one, Bob answers again.
        let b1 = try bob.seal("b1", to: alice)
        #expect(try alice.open(b1, from: bob) == "b1")
        let a1 = try alice.seal("a1", to: bob)
        #expect(try bob.open(a1, from: alice) == "a1")
        let b2 = try bob.seal("b2: after Bob's fresh ratchet key", to: alice)
        #expect(try alice.open(b2, from: bob) == "b2: after Bob's fresh ratchet key")
        let a2 = try alice.seal("a2", to: bob)
        #expect(try bob.open(a2, from: alice) == "a2")
        // Eve saw every envelope; she had Bob's sending key for b1 and could follow a1, but b2 and a2
        // come from keys generated after her copy.
        _ = try? eve.open(a1, from: alice)
        #expect(throws: SessionError.self) { try eve.open(b2, from: bob) }
        #expect(throws: SessionError.self) { try eve.open(a2, from: alice) }
    }

    @Test func serializedStateRoundTrips() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        _ = try bob.open(alice.seal("one", to: bob), from: alice)
        let lost = try alice.seal("lost for now", to: bob)
        _ = try bob.open(alice.seal("three", to: bob), from: alice)
        bob.record = try SessionRecord(serialized: bob.record.serialized)
        bob.prekeys = try DevicePrekeys(serialized: bob.prekeys.serialized)
        #expect(try bob.open(lost, from: alice) == "lost for now")
        #expect(try alice.open(bob.seal("reply", to: alice), from: bob) == "reply")
        #expect(bob.record.serialized == (try SessionRecord(serialized: bob.record.serialized)).serialized)
        for count in [0, 1, 5, 40] {
            #expect(throws: SessionError.self) { try SessionRecord(serialized: bob.record.serialized.prefix(count)) }
        }
        #expect(throws: SessionError.self) { try SessionRecord(serialized: bob.record.serialized + [0]) }
        #expect(throws: SessionError.self) { try DevicePrekeys(serialized: bob.prekeys.serialized.dropLast()) }
    }

    /// The overhead docs/PROTOCOL.md §9.4 states, next to v1.
    @Test func overheadPerMessage() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        let text = String(repeating: "A", count: 1024)
        let padded = Padme.pad(Array(text.utf8)).count
        let first = try alice.seal(text, to: bob)
        #expect(first.serialized.count - padded == 150 + SessionStart.byteCount)
        #expect(SessionStart.byteCount == 1164)
        _ = try bob.open(first, from: alice)
        _ = try alice.open(bob.seal("ok", to: alice), from: bob)
        #expect(try alice.seal(text, to: bob).serialized.count - padded == 150)
        let v1 = try SealedEnvelope.seal(
            Array(text.utf8), from: alice.identity, senderUserID: alice.user, to: bob.publicIdentity,
            recipientUserID: bob.user, signed: true)
        #expect(v1.serialized.count - padded == 242)
        let v1XWing = try SealedEnvelope.seal(
            Array(text.utf8), from: alice.identity, senderUserID: alice.user, to: bob.publicIdentity,
            recipientUserID: bob.user, suite: .xwingAES256GCM)
        #expect(v1XWing.serialized.count - padded == 1297)
    }

    @Test func prekeySignaturesAreChecked() throws {
        let alice = try SessionParty()
        let bob = try SessionParty()
        let carol = try SessionParty()
        let good = try bob.bundle()
        #expect(throws: Never.self) { try good.verify(for: bob.publicIdentity) }
        #expect(throws: SessionError.bundleMismatch) { try good.verify(for: carol.publicIdentity) }
        var key = Array(good.signedPrekey.publicKey)
        key[0] ^= 1
        let forged = PrekeyBundle(
            deviceID: good.deviceID,
            signedPrekey: SignedPrekey(
                kind: .x25519, id: good.signedPrekey.id, publicKey: Data(key), signature: good.signedPrekey.signature),
            kemPrekey: good.kemPrekey, oneTimePrekey: good.oneTimePrekey)
        #expect(throws: SessionError.badPrekeySignature("signed")) { try forged.verify(for: bob.publicIdentity) }
        var record = SessionRecord()
        #expect(throws: SessionError.badPrekeySignature("signed")) {
            try record.start(from: alice.identity, to: bob.publicIdentity, bundle: forged)
        }
        // Carol's X-Wing prekey under Bob's id is refused too.
        let swapped = PrekeyBundle(
            deviceID: good.deviceID, signedPrekey: good.signedPrekey, kemPrekey: try carol.bundle().kemPrekey,
            oneTimePrekey: nil)
        #expect(throws: SessionError.badPrekeySignature("post-quantum (X-Wing)")) {
            try swapped.verify(for: bob.publicIdentity)
        }
    }

    @Test func rotationKeepsRecentPrekeys() throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var prekeys = try DevicePrekeys.generate(now: start)
        let firstID = prekeys.signed[0].id
        #expect(!prekeys.needsRotation(now: start.addingTimeInterval(6 * 86_400)))
        #expect(prekeys.needsRotation(now: start.addingTimeInterval(7 * 86_400)))
        try prekeys.rotate(now: start.addingTimeInterval(7 * 86_400))
        #expect(throws: Never.self) { try prekeys.signedPrekey(firstID) }
        try prekeys.rotate(now: start.addingTimeInterval(14 * 86_400))
        try prekeys.rotate(now: start.addingTimeInterval(38 * 86_400))
        // On day 38 the first (replaced on day 7) is past its 30 days; the one replaced on day 14 is not.
        #expect(throws: SessionError.unknownPrekey("signed prekey \(firstID)")) { try prekeys.signedPrekey(firstID) }
        #expect(prekeys.signed.count == 3)
        #expect(prekeys.kem.count == 3)
    }
}

extension Array where Element == UInt8 {
    func containsSubsequence(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { self[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
