import Crypto
import Foundation
import Testing

@testable import ConfidantCrypto

/// The device's private prekeys as a peer that drains them would push them: bounded in number
/// and age, and stored without a count that can overflow.
@Suite("Device prekeys")
struct DevicePrekeysTests {
    @Test("refills that are never used cannot grow the store: at most 1,000 one-time keys, the newest kept")
    func drainedRefillsStayBounded() throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var prekeys = try DevicePrekeys.generate(now: start)
        var newest: [OneTimePrekey] = []
        // 30 refills of 100, as if a peer claimed every bundle the relay had, 30 times.
        for round in 1...30 {
            newest = prekeys.addOneTimePrekeys(DevicePrekeys.batchSize, now: start.addingTimeInterval(Double(round)))
        }
        #expect(prekeys.oneTimeCount == DevicePrekeys.maximumOneTime)
        let stored = try DevicePrekeys(serialized: prekeys.serialized)
        #expect(stored.oneTimeCount == DevicePrekeys.maximumOneTime)
        #expect(Set(stored.allOneTimePrekeys.map(\.id)).isSuperset(of: newest.map(\.id)))
    }

    @Test("unused one-time keys are forgotten after 60 days")
    func unusedKeysExpire() throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var prekeys = try DevicePrekeys.generate(now: start)
        let old = prekeys.allOneTimePrekeys.map(\.id)
        let fresh = prekeys.addOneTimePrekeys(10, now: start.addingTimeInterval(DevicePrekeys.oneTimeRetention + 1))
        #expect(prekeys.oneTimeCount == 10)
        #expect(Set(prekeys.allOneTimePrekeys.map(\.id)) == Set(fresh.map(\.id)))
        #expect(Set(old).isDisjoint(with: fresh.map(\.id)))
    }

    @Test("a version 1 store (no times for one-time keys) still opens; repeated ids are refused")
    func formatVersions() throws {
        let prekeys = try DevicePrekeys.generate()
        let v2 = [UInt8](prekeys.serialized)
        #expect(v2[0] == 2)
        // Version 1: the same, without the u64 creation time of each one-time key.
        var reader = v2[...]
        var v1: [UInt8] = [1]
        reader = reader.dropFirst()
        v1 += reader.prefix(4)
        reader = reader.dropFirst(4)
        for size in [44, 44] {  // n signed keys, then m X-Wing keys: u32 id | u64 created | 32 bytes
            let count = Int(reader.first ?? 0)
            v1 += reader.prefix(1 + count * size)
            reader = reader.dropFirst(1 + count * size)
        }
        let count = Int(reader[reader.startIndex]) << 8 | Int(reader[reader.startIndex + 1])
        v1 += reader.prefix(2)
        reader = reader.dropFirst(2)
        for _ in 0..<count {
            v1 += reader.prefix(4)
            v1 += reader.dropFirst(12).prefix(32)
            reader = reader.dropFirst(44)
        }
        let read = try DevicePrekeys(serialized: v1)
        #expect(read.allOneTimePrekeys == prekeys.allOneTimePrekeys)
        #expect(read.currentIDs?.signed == prekeys.currentIDs?.signed)
        // The same one-time id twice.
        var doubled = v2
        let firstOneTime = v2.count - count * 44
        doubled[v2.count - (count - 1) * 44..<v2.count - (count - 1) * 44 + 4] =
            doubled[firstOneTime..<firstOneTime + 4]
        #expect(throws: SessionError.self) { try DevicePrekeys(serialized: doubled) }
    }
}
