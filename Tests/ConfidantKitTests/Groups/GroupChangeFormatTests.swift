import ConfidantAuth
import ConfidantCrypto
import Foundation
import Testing

@testable import ConfidantKit

/// The layout of docs/PROTOCOL.md §10.2 and what it refuses to read.
@Suite("Group change format")
struct GroupChangeFormatTests {
    @Test("Every action reads back as written")
    func roundTrip() throws {
        let people = try GroupPeople(count: 2)
        let parent = GroupChangeDigest(Array(repeating: 5, count: 32))
        let actions: [GroupChange.Action] = [
            .add([UUID(), UUID()]), .remove([people[1].user]), .leave, .promote(people[1].user),
            .demote(people[1].user), .rename("Ünïcode ✓"), .picture(Data(repeating: 1, count: 32)), .picture(nil),
            .timer(seconds: 0), .timer(seconds: 2_419_200),
        ]
        for action in actions {
            let change = try people.change(action, by: 0, number: 9, parent: parent)
            let read = try GroupChange(serialized: change.serialized)
            #expect(read == change)
            #expect(read.action == action)
            #expect(read.parent == parent)
            #expect(read.author == DeviceAddress(userID: people[0].user, deviceID: people[0].identity.deviceID))
            _ = try people.verify(read)
        }
        let creation = try people.creation(name: "A")
        #expect(
            try GroupChange(serialized: creation.serialized).action == .create(name: "A", members: [people[1].user]))
    }

    @Test("Malformed changes are refused with a reason")
    func malformed() throws {
        let people = try GroupPeople(count: 2)
        let rename = try people.change(
            .rename("Ok"), by: 0, number: 2, parent: GroupChangeDigest(Array(repeating: 5, count: 32)))
        let bytes = [UInt8](rename.serialized)
        func read(_ bytes: [UInt8]) throws { _ = try GroupChange(serialized: Data(bytes)) }
        #expect(throws: GroupChangeError.malformed("truncated")) { try read(Array(bytes.prefix(100))) }
        #expect(throws: GroupChangeError.unsupportedVersion(2)) { try read([2] + bytes.dropFirst()) }
        #expect(throws: GroupChangeError.malformed("bytes after the signature")) { try read(bytes + [0]) }
        var unknown = bytes
        unknown[109] = 42
        #expect(throws: GroupChangeError.unknownAction(42)) { try read(unknown) }
        var noParent = bytes
        for index in 37..<69 { noParent[index] = 0 }
        #expect(throws: GroupChangeError.malformed("a change after the creation needs a parent and a number above 1")) {
            try read(noParent)
        }
        for name in ["", "   ", "tab\tname", String(repeating: "x", count: 129)] {
            #expect(throws: GroupChangeError.self) {
                try people.change(.rename(name), by: 0, number: 2, parent: rename.digest)
            }
        }
        let someone = UUID()
        #expect(throws: GroupChangeError.self) {
            try people.change(.add([someone, someone]), by: 0, number: 2, parent: rename.digest)
        }
        #expect(throws: GroupChangeError.self) {
            try people.change(.add((0...1_000).map { _ in UUID() }), by: 0, number: 2, parent: rename.digest)
        }
        #expect(throws: GroupChangeError.self) {
            try people.change(.timer(seconds: 4), by: 0, number: 2, parent: rename.digest)
        }
        #expect(throws: GroupChangeError.self) {
            try people.change(.create(name: "Self", members: [people[0].user]), by: 0, number: 1, parent: nil)
        }
        #expect(throws: GroupChangeError.self) {
            try people.change(.create(name: "Late", members: []), by: 0, number: 2, parent: rename.digest)
        }
    }

    @Test("Random bytes and mutations of a change never trap")
    func mutations() throws {
        let people = try GroupPeople(count: 2)
        let creation = try people.creation()
        var generator = SeededRandomNumberGenerator(seed: 7)
        for _ in 0..<2_000 {
            var bytes = [UInt8](creation.serialized)
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            if let change = try? GroupChange(serialized: Data(bytes)), change.serialized != creation.serialized {
                #expect(throws: GroupChangeError.badSignature) { try people.verify(change) }
            }
        }
    }
}
