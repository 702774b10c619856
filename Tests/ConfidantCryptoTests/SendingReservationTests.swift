import Foundation
import Testing

@testable import ConfidantCrypto

/// A sending chain reserves message numbers ahead, so that an envelope may leave before the
/// state that sealed it is on disk: a state read back after a power cut goes on past what it
/// may have used, and never seals a number twice.
@Suite struct SendingReservationTests {
    @Test func sealBeyondTheReservationReservesTheNextNumbers() throws {
        var alice = try SessionParty()
        let bob = try SessionParty()
        _ = try alice.seal("start", to: bob)
        #expect(alice.record.canSeal)
        let reservation = RatchetSession.sendingReservation
        // The first seal had nothing reserved; it reserved the numbers up to `reservation`.
        #expect(alice.record.sendingReservation?.end == reservation)
        for number in 1..<reservation {
            #expect(alice.record.sealsWithinReservation, "number \(number) was reserved")
            let envelope = try alice.seal("message \(number)", to: bob)
            #expect(envelope.messageNumber == number)
            #expect(alice.record.sendingReservation?.end == reservation, "within it, nothing more is reserved")
        }
        #expect(!alice.record.sealsWithinReservation)
        _ = try alice.seal("beyond", to: bob)
        #expect(alice.record.sendingReservation?.end == 2 * reservation)
    }

    @Test func stateReadBackAfterALossGoesOnPastTheReservation() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        #expect(try bob.open(alice.seal("on disk", to: bob), from: alice) == "on disk")
        // What a power cut brings back: the record as the synced write left it.
        let onDisk = alice.record.serialized
        var lost: [RatchetEnvelope] = []
        for number in 1...5 { lost.append(try alice.seal("lost \(number)", to: bob)) }
        for envelope in lost.prefix(3) { _ = try bob.open(envelope, from: alice) }

        // Read back as it was, the chain would seal number 1 again: a message key used twice.
        var rolledBack = alice
        rolledBack.record = try SessionRecord(serialized: onDisk)
        #expect(try rolledBack.seal("again", to: bob).messageNumber == 1)

        alice.record = try SessionRecord(serialized: onDisk)
        alice.record.skipToReservations()
        #expect(!alice.record.sealsWithinReservation, "the reservation is used up: the next seal reserves anew")
        let next = try alice.seal("after the power cut", to: bob)
        #expect(next.messageNumber == RatchetSession.sendingReservation)
        #expect(!lost.contains { $0.messageNumber == next.messageNumber && $0.ratchetKey == next.ratchetKey })
        #expect(try bob.open(next, from: alice) == "after the power cut", "the peer skips the numbers between")
        // The two lost messages that had not arrived still open (their keys were skipped).
        for envelope in lost.suffix(2) { _ = try bob.open(envelope, from: alice) }
        #expect(throws: SessionError.duplicate) { try bob.open(lost[0], from: alice) }
    }

    @Test func threeLostRunsInARowStayWithinThePeersSkipLimit() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        #expect(try bob.open(alice.seal("arrives", to: bob), from: alice) == "arrives")
        // Each run ends in a power cut: read back, the state goes on from its reservation, and
        // the seal after that reserves anew (synced) and leaves, but never arrives.
        for _ in 1...2 {
            alice.record = try SessionRecord(serialized: alice.record.serialized)
            alice.record.skipToReservations()
            _ = try alice.seal("lost", to: bob)
        }
        alice.record = try SessionRecord(serialized: alice.record.serialized)
        alice.record.skipToReservations()
        let next = try alice.seal("after three lost runs", to: bob)
        #expect(next.messageNumber == 3 * RatchetSession.sendingReservation)
        #expect(try bob.open(next, from: alice) == "after three lost runs", "the gap is within the peer's limit")
    }

    @Test func aNewSendingChainIsBornWithItsReservation() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        _ = try bob.open(alice.seal("hello", to: bob), from: alice)
        #expect(bob.record.sealsWithinReservation, "the responder's first chain")
        #expect(alice.record.sendingReservation?.end == RatchetSession.sendingReservation)
        let firstChain = try #require(alice.record.sendingReservation?.ratchetKey)
        _ = try alice.open(bob.seal("hi", to: alice), from: bob)
        // Alice's DH ratchet turned with Bob's reply: her next chain starts with its reservation.
        #expect(alice.record.sendingReservation?.ratchetKey != firstChain)
        #expect(alice.record.sendingReservation?.end == RatchetSession.sendingReservation)
        #expect(alice.record.sealsWithinReservation)
        let envelope = try alice.seal("on the new chain", to: bob)
        #expect(envelope.messageNumber == 0)
        #expect(try bob.open(envelope, from: alice) == "on the new chain")
        // Read back after a loss, a chain nothing was sealed on goes on from its reservation too.
        _ = try alice.open(bob.seal("again", to: alice), from: bob)
        var afterLoss = alice
        afterLoss.record.skipToReservations()
        let after = try afterLoss.seal("after the loss", to: bob)
        #expect(after.messageNumber == RatchetSession.sendingReservation)
        #expect(try bob.open(after, from: alice) == "after the loss", "the peer skips the numbers between")
    }

    @Test func aRecordSaysWhatItReservesBeyondTheOneItReplaces() throws {
        var alice = try SessionParty()
        var bob = try SessionParty()
        let empty = alice.record
        _ = try alice.seal("start", to: bob)
        #expect(alice.record.newReservation(beyond: empty) == .extended, "a new session reserves its first numbers")
        #expect(alice.record.newReservation(beyond: nil) == .extended)
        var stored = alice.record
        _ = try alice.seal("within", to: bob)
        #expect(alice.record.newReservation(beyond: stored) == .none, "within the reservation")
        for _ in 2..<RatchetSession.sendingReservation { _ = try alice.seal("within", to: bob) }
        stored = alice.record
        _ = try alice.seal("beyond", to: bob)
        #expect(alice.record.newReservation(beyond: stored) == .extended)

        // A session Bob's side begins from Alice's first message: a chain with nothing sealed yet.
        let bobEmpty = bob.record
        _ = try bob.open(alice.seal("more", to: bob), from: alice)
        #expect(bob.record.newReservation(beyond: bobEmpty) == .newChain)

        // Bob's reply turns Alice's DH ratchet: a new chain, born with its reservation.
        stored = alice.record
        _ = try alice.open(bob.seal("reply", to: alice), from: bob)
        #expect(alice.record.newReservation(beyond: stored) == .newChain)
        let stepped = alice.record
        _ = try alice.seal("on the new chain", to: bob)
        #expect(alice.record.newReservation(beyond: stepped) == .none, "within the reservation it was born with")
        #expect(alice.record.newReservation(beyond: stored) == .extended, "stepped and sealed on since `stored`")

        // Moving on to the reservation (after a loss) reserves nothing new.
        var moved = alice.record
        moved.skipToReservations()
        #expect(moved.newReservation(beyond: alice.record) == .none)
    }

    @Test func versionOneRecordsReserveNothing() throws {
        var alice = try SessionParty()
        let bob = try SessionParty()
        for number in 0..<3 { _ = try alice.seal("message \(number)", to: bob) }
        let current = try #require(alice.record.sessions.first)
        // The same session in version 1: no reservation field after Nr.
        let v2 = Array(current.serialized)
        let flags = v2[1]
        let chains = [0x01, 0x02, 0x04].filter { flags & $0 != 0 }.count
        let reserveOffset = 2 + 4 * 32 + chains * 32 + 12
        #expect(Array(v2[reserveOffset..<reserveOffset + 4]) == RatchetSession.sendingReservation.bigEndianBytes)
        var v1 = v2
        v1[0] = 1
        v1.removeSubrange(reserveOffset..<reserveOffset + 4)
        let read = try RatchetSession(serialized: v1)
        #expect(read.sendCount == 3)
        #expect(!read.sealsWithinReservation, "a version 1 state reserved nothing")
        #expect(read.serialized.count == v2.count)

        // A reservation behind the chain is refused.
        var behind = v2
        behind.replaceSubrange(reserveOffset..<reserveOffset + 4, with: [0, 0, 0, 2])
        #expect(throws: SessionError.self) { try RatchetSession(serialized: behind) }
    }
}

extension UInt32 {
    fileprivate var bigEndianBytes: [UInt8] { withUnsafeBytes(of: bigEndian, Array.init) }
}
