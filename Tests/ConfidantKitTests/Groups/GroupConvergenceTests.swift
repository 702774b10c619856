import ConfidantAuth
import ConfidantCrypto
import Foundation
import Testing

@testable import ConfidantKit

/// Members acting at once on what each has seen, with changes delivered late and out of order:
/// every device ends with the same state and the same refusals (docs/PROTOCOL.md §10.3).
@Suite("Group convergence")
struct GroupConvergenceTests {
    static let people = Result { try GroupPeople(count: 5) }

    @Test("Any order of delivery gives every device the same group", arguments: 0..<60)
    func converges(seed: UInt64) throws {
        let people = try Self.people.get()
        var random = SeededRandomNumberGenerator(seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ 1)
        let creation = try people.creation()
        var ledgers = (0..<5).map { _ in GroupLedger(groupID: people.groupID) }
        for index in ledgers.indices { _ = try ledgers[index].insert(creation, from: people) }
        var inboxes: [[GroupChange]] = Array(repeating: [], count: 5)
        var made: [GroupChange] = [creation]

        for _ in 0..<40 {
            // Mostly someone who is an admin on their own device, so that admins act at once.
            let admins = (0..<5).filter { ledgers[$0].state?.isAdmin(people[$0].user) == true }
            let actor =
                !admins.isEmpty && Int.random(in: 0..<4, using: &random) > 0
                ? admins[Int.random(in: 0..<admins.count, using: &random)] : Int.random(in: 0..<5, using: &random)
            if let change = try Self.act(actor, ledger: ledgers[actor], people: people, random: &random) {
                _ = try ledgers[actor].insert(change, from: people)
                made.append(change)
                for other in inboxes.indices where other != actor { inboxes[other].append(change) }
            }
            for _ in 0..<Int.random(in: 0...4, using: &random) {
                let device = Int.random(in: 0..<5, using: &random)
                guard !inboxes[device].isEmpty else { continue }
                let change = inboxes[device].remove(at: Int.random(in: 0..<inboxes[device].count, using: &random))
                _ = try ledgers[device].insert(change, from: people)
            }
        }
        for device in inboxes.indices {
            for change in inboxes[device].shuffled(using: &random) {
                _ = try ledgers[device].insert(change, from: people)
            }
        }

        var reversed = GroupLedger(groupID: people.groupID)
        for change in made.reversed() { _ = try reversed.insert(change, from: people) }
        var resolved = ledgers[0]
        resolved.resolve()
        for ledger in ledgers.dropFirst() + [reversed, resolved] {
            #expect(ledger.state == ledgers[0].state)
            for change in made { #expect(ledger.outcome(of: change.digest) == ledgers[0].outcome(of: change.digest)) }
        }
        let state = try #require(ledgers[0].state)
        #expect(state.admins.allSatisfy(state.isMember), "admins are members")
        #expect(state.members.isEmpty || !state.admins.isEmpty, "a group with members has an admin")
    }

    /// A change the actor would make on what their device has seen; sometimes one their client
    /// would refuse to make (a forgery), which every device must refuse.
    static func act(
        _ actor: Int, ledger: GroupLedger, people: GroupPeople, random: inout SeededRandomNumberGenerator
    ) throws -> GroupChange? {
        guard let state = ledger.state else { return nil }
        let others = people.people.map(\.user).filter { $0 != people[actor].user }
        let someone = others[Int.random(in: 0..<others.count, using: &random)]
        let action: GroupChange.Action
        switch Int.random(in: 0..<20, using: &random) {
        case 0..<4: action = .rename("name \(Int.random(in: 0..<1_000, using: &random))")
        case 4..<9: action = .promote(someone)
        case 9, 10: action = .demote(someone)
        case 11..<14: action = .remove([someone])
        case 14, 15: action = .timer(seconds: 60)
        case 16..<19: action = .add([someone])
        default: action = .leave
        }
        do {
            return try ledger.makeChange(action, author: people[actor].user, identity: people[actor].identity)
        } catch {
            guard Int.random(in: 0..<5, using: &random) == 0 else { return nil }
            return try people.change(action, by: actor, number: state.headNumber + 1, parent: state.head)
        }
    }
}
