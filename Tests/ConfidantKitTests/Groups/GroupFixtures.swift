import ConfidantCrypto
import Foundation
import Testing

@testable import ConfidantKit

/// Users with one device each, and the directory a member's client checks signatures with.
struct GroupPeople {
    struct Person {
        let user: UUID
        let identity: PrivateIdentity
    }

    let people: [Person]
    let groupID = UUID()

    init(count: Int) throws {
        people = try (0..<count).map { _ in Person(user: UUID(), identity: try PrivateIdentity.generate()) }
    }

    subscript(index: Int) -> Person { people[index] }

    /// The identity the directory lists for the change's author device.
    func verify(_ change: GroupChange) throws -> VerifiedGroupChange {
        guard let author = people.first(where: { $0.identity.deviceID == change.author.deviceID }) else {
            throw GroupChangeError.badSignature
        }
        return try change.verified(by: author.identity.publicIdentity)
    }

    /// A change by person `index` built on `parent` (or the creation), signed, not checked.
    func change(
        _ action: GroupChange.Action, by index: Int, number: UInt32, parent: GroupChangeDigest?
    ) throws -> GroupChange {
        try GroupChange.make(
            groupID: groupID, number: number, parent: parent, action: action, author: self[index].user,
            identity: self[index].identity)
    }

    /// The creation by person 0 with everyone else as members.
    func creation(name: String = "Family") throws -> GroupChange {
        try change(.create(name: name, members: people.dropFirst().map(\.user)), by: 0, number: 1, parent: nil)
    }
}

extension GroupLedger {
    /// Inserts a change whose author's signature the people's directory checks.
    mutating func insert(_ change: GroupChange, from people: GroupPeople) throws -> Insertion {
        insert(try people.verify(change))
    }

    /// Makes a change by person `index` on this ledger's head and inserts it.
    mutating func make(_ action: GroupChange.Action, by index: Int, _ people: GroupPeople) throws -> GroupChange {
        let change = try makeChange(action, author: people[index].user, identity: people[index].identity)
        #expect(try insert(change, from: people) == .placed)
        return change
    }
}
