import ConfidantCrypto
import Foundation
import Testing

@testable import ConfidantKit

/// The rules of docs/PROTOCOL.md §10.3 on one ledger: who may change what, and what is refused.
@Suite("Group ledger")
struct GroupLedgerTests {
    @Test("A creation, then an admin's changes, make the state every member computes")
    func linearChanges() throws {
        let people = try GroupPeople(count: 4)
        var ledger = GroupLedger(groupID: people.groupID)
        #expect(try ledger.insert(people.creation(), from: people) == .placed)
        _ = try ledger.make(.promote(people[1].user), by: 0, people)
        _ = try ledger.make(.rename("Team"), by: 1, people)
        _ = try ledger.make(.remove([people[3].user]), by: 1, people)
        _ = try ledger.make(.timer(seconds: 3_600), by: 0, people)
        _ = try ledger.make(.leave, by: 2, people)
        let state = try #require(ledger.state)
        #expect(state.name == "Team")
        #expect(state.members == [people[0].user, people[1].user])
        #expect(state.admins == [people[0].user, people[1].user])
        #expect(state.timerSeconds == 3_600)
        #expect(state.version == 6)
        #expect(ledger.refusals.isEmpty)
    }

    @Test("A member who is not an admin cannot change the group, and a client will not make it")
    func nonAdminRefused() throws {
        let people = try GroupPeople(count: 3)
        var ledger = GroupLedger(groupID: people.groupID)
        _ = try ledger.insert(people.creation(), from: people)
        let state = try #require(ledger.state)
        #expect(throws: GroupChangeMakingError.refused(.authorNotAdmin)) {
            try ledger.makeChange(.remove([people[0].user]), author: people[2].user, identity: people[2].identity)
        }
        let forged = try people.change(.remove([people[0].user]), by: 2, number: 2, parent: state.head)
        #expect(try ledger.insert(forged, from: people) == .placed)
        #expect(ledger.outcome(of: forged.digest) == .refused(.authorNotAdmin))
        #expect(ledger.state?.members.contains(people[0].user) == true)
        // A change built on the refused one is refused too, even from an admin.
        let onTop = try people.change(.rename("Ours"), by: 0, number: 3, parent: forged.digest)
        _ = try ledger.insert(onTop, from: people)
        #expect(ledger.outcome(of: onTop.digest) == .refused(.buildsOnRefused(forged.digest)))
        #expect(ledger.state?.name == "Family")
    }

    @Test("A replayed change is a duplicate; a forged signature, a bad number or another group never place")
    func replaysAndForgeries() throws {
        let people = try GroupPeople(count: 3)
        var ledger = GroupLedger(groupID: people.groupID)
        let creation = try people.creation()
        _ = try ledger.insert(creation, from: people)
        let rename = try ledger.make(.rename("New"), by: 0, people)
        #expect(try ledger.insert(rename, from: people) == .duplicate)
        #expect(try ledger.insert(creation, from: people) == .duplicate)
        #expect(ledger.state?.version == 2)
        // Signed by person 1's device but claiming person 0's: the signature does not verify.
        #expect(throws: GroupChangeError.badSignature) {
            try rename.verified(by: people[1].identity.publicIdentity)
        }
        var tampered = [UInt8](rename.serialized)
        tampered[80] ^= 1
        let altered = try GroupChange(serialized: Data(tampered))
        #expect(throws: GroupChangeError.badSignature) { try people.verify(altered) }
        let skipping = try people.change(.rename("Skip"), by: 0, number: 4, parent: rename.digest)
        #expect(try ledger.insert(skipping, from: people) == .rejected(.badNumber))
        let second = try people.change(.create(name: "Again", members: []), by: 0, number: 1, parent: nil)
        #expect(try ledger.insert(second, from: people) == .rejected(.secondCreation))
        var other = GroupLedger(groupID: UUID())
        #expect(try other.insert(rename, from: people) == .rejected(.wrongGroup))
        #expect(ledger.state?.name == "New")
    }

    @Test("A change that arrives before the one it builds on waits, then applies")
    func waitsForParent() throws {
        let people = try GroupPeople(count: 3)
        var source = GroupLedger(groupID: people.groupID)
        let creation = try people.creation()
        _ = try source.insert(creation, from: people)
        let promote = try source.make(.promote(people[1].user), by: 0, people)
        let rename = try source.make(.rename("Later"), by: 1, people)
        var ledger = GroupLedger(groupID: people.groupID)
        #expect(try ledger.insert(rename, from: people) == .waiting)
        #expect(try ledger.insert(promote, from: people) == .waiting)
        #expect(ledger.state == nil)
        #expect(try ledger.insert(creation, from: people) == .placed)
        #expect(ledger.state == source.state)
        #expect(ledger.outcome(of: rename.digest) == .applied)
    }

    @Test("A removed admin's change made at the same time as the removal, or back-dated, is overruled")
    func removalWins() throws {
        let people = try GroupPeople(count: 4)
        var ledger = GroupLedger(groupID: people.groupID)
        _ = try ledger.insert(people.creation(), from: people)
        let promote = try ledger.make(.promote(people[1].user), by: 0, people)
        let removal = try ledger.make(.remove([people[1].user]), by: 0, people)
        // Person 1 answers with changes built on the state before their removal.
        let addFriend = try people.change(.add([UUID()]), by: 1, number: 3, parent: promote.digest)
        let counter = try people.change(.remove([people[0].user]), by: 1, number: 3, parent: promote.digest)
        _ = try ledger.insert(addFriend, from: people)
        _ = try ledger.insert(counter, from: people)
        #expect(ledger.outcome(of: addFriend.digest) == .refused(.overruled(by: removal.digest)))
        #expect(ledger.outcome(of: counter.digest) == .refused(.outranked(people[0].user)))
        #expect(ledger.outcome(of: removal.digest) == .applied)
        let state = try #require(ledger.state)
        #expect(state.members == [people[0].user, people[2].user, people[3].user])
        #expect(state.admins == [people[0].user])
        // A change on the head still applies after the branch is resolved.
        _ = try ledger.make(.rename("After"), by: 0, people)
        #expect(ledger.state?.name == "After")
    }

    @Test("An admin cannot remove an earlier admin; a junior admin's removal of a third is overruled by its own")
    func seniority() throws {
        let people = try GroupPeople(count: 5)
        var ledger = GroupLedger(groupID: people.groupID)
        _ = try ledger.insert(people.creation(), from: people)
        _ = try ledger.make(.promote(people[1].user), by: 0, people)
        let base = try ledger.make(.promote(people[2].user), by: 0, people)
        #expect(throws: GroupChangeMakingError.refused(.outranked(people[1].user))) {
            try ledger.makeChange(.remove([people[1].user]), author: people[2].user, identity: people[2].identity)
        }
        let twoRemovesOne = try people.change(.remove([people[1].user]), by: 2, number: 4, parent: base.digest)
        _ = try ledger.insert(twoRemovesOne, from: people)
        #expect(ledger.outcome(of: twoRemovesOne.digest) == .refused(.outranked(people[1].user)))
        // Person 1 removes person 2 while person 2 removes person 3: the earlier admin stands.
        let oneRemovesTwo = try people.change(.remove([people[2].user]), by: 1, number: 4, parent: base.digest)
        let twoRemovesThree = try people.change(.remove([people[3].user]), by: 2, number: 4, parent: base.digest)
        _ = try ledger.insert(twoRemovesThree, from: people)
        _ = try ledger.insert(oneRemovesTwo, from: people)
        #expect(ledger.outcome(of: oneRemovesTwo.digest) == .applied)
        #expect(ledger.outcome(of: twoRemovesThree.digest) == .refused(.overruled(by: oneRemovesTwo.digest)))
        #expect(ledger.state?.members == [people[0].user, people[1].user, people[3].user, people[4].user])
    }

    @Test("A removed admin cannot undo the removal by back-dating a removal of the admin before it")
    func backDatedRemovalOfAnotherAdmin() throws {
        let people = try GroupPeople(count: 5)
        var ledger = GroupLedger(groupID: people.groupID)
        _ = try ledger.insert(people.creation(), from: people)
        let promoteOne = try ledger.make(.promote(people[1].user), by: 0, people)
        _ = try ledger.make(.promote(people[2].user), by: 0, people)
        let rename = try ledger.make(.rename("By two"), by: 2, people)
        let removal = try ledger.make(.remove([people[1].user]), by: 0, people)
        // Person 1, removed, removes person 2 from before person 2's rename, so that the
        // rename (and the removal built on it) would fall.
        let backDated = try people.change(.remove([people[2].user]), by: 1, number: 3, parent: promoteOne.digest)
        _ = try ledger.insert(backDated, from: people)
        #expect(ledger.outcome(of: backDated.digest) == .refused(.overruled(by: removal.digest)))
        #expect(ledger.outcome(of: rename.digest) == .applied)
        #expect(ledger.outcome(of: removal.digest) == .applied)
        #expect(ledger.state?.isMember(people[1].user) == false)
        #expect(ledger.state?.isMember(people[2].user) == true)
    }

    @Test("An ouster built on an overruled change does not stand: the admin it named keeps acting")
    func deadBranchOuster() throws {
        let people = try GroupPeople(count: 4)
        var ledger = GroupLedger(groupID: people.groupID)
        _ = try ledger.insert(people.creation(), from: people)
        for index in 1...3 { _ = try ledger.make(.promote(people[index].user), by: 0, people) }
        let base = try #require(ledger.state)
        let removal = try ledger.make(.remove([people[1].user]), by: 0, people)
        let stale = try people.change(.rename("Stale"), by: 1, number: 5, parent: base.head)
        let demotion = try people.change(.demote(people[3].user), by: 2, number: 6, parent: stale.digest)
        _ = try ledger.insert(stale, from: people)
        _ = try ledger.insert(demotion, from: people)
        #expect(ledger.outcome(of: stale.digest) == .refused(.overruled(by: removal.digest)))
        #expect(ledger.outcome(of: demotion.digest) == .refused(.buildsOnRefused(stale.digest)))
        let rename = try ledger.make(.rename("Three's"), by: 3, people)
        #expect(ledger.outcome(of: rename.digest) == .applied)
        #expect(ledger.state?.name == "Three's")
        #expect(ledger.state?.admins == [people[0].user, people[2].user, people[3].user])
    }

    @Test("The last admin leaving makes the longest-standing member admin")
    func lastAdminLeaves() throws {
        let people = try GroupPeople(count: 3)
        var ledger = GroupLedger(groupID: people.groupID)
        _ = try ledger.insert(people.creation(), from: people)
        _ = try ledger.make(.leave, by: 0, people)
        #expect(ledger.state?.admins == [people[1].user])
        _ = try ledger.make(.rename("Still here"), by: 1, people)
        #expect(ledger.state?.name == "Still here")
    }

    @Test("Bounds: members, waiting changes")
    func bounds() throws {
        let people = try GroupPeople(count: 2)
        var ledger = GroupLedger(groupID: people.groupID)
        _ = try ledger.insert(people.creation(), from: people)
        #expect(throws: GroupChangeMakingError.refused(.groupFull)) {
            try ledger.makeChange(
                .add((0..<999).map { _ in UUID() }), author: people[0].user, identity: people[0].identity)
        }
        _ = try ledger.make(.add((0..<998).map { _ in UUID() }), by: 0, people)
        #expect(ledger.state?.members.count == 1_000)
        var unknown = GroupChangeDigest(Array(repeating: 7, count: 32))
        for number in 0..<GroupLedger.maximumWaiting {
            let change = try people.change(.rename("n\(number)"), by: 0, number: 5, parent: unknown)
            #expect(try ledger.insert(change, from: people) == .waiting)
            unknown = GroupChangeDigest(Array(repeating: UInt8(number % 200 + 1), count: 32))
        }
        let one = try people.change(.rename("one more"), by: 0, number: 5, parent: unknown)
        #expect(try ledger.insert(one, from: people) == .rejected(.tooManyWaiting))
    }
}
