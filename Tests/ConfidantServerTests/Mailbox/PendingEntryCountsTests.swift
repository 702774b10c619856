import ConfidantCrypto
import Foundation
import Testing

@testable import ConfidantServer

/// The mailboxes' entry counts the relay's write connection keeps between transactions.
@Suite("Pending entry counts")
struct PendingEntryCountsTests {
    private let device = DeviceAddress(userID: UUID(), deviceID: UUID())
    private let other = DeviceAddress(userID: UUID(), deviceID: UUID())

    @Test("a transaction's changes count once it commits, and never when it rolls back")
    func commitAndRollback() {
        let counts = PendingEntryCounts()
        counts.check(dataVersion: 1)
        #expect(counts.count(of: device) == nil)
        counts.counted(5, for: device)
        counts.add(2, for: device)
        counts.add(-1, for: device)
        #expect(counts.count(of: device) == 6, "the transaction sees its own changes")
        counts.rolledBack()
        #expect(counts.count(of: device) == 5)
        counts.add(-3, for: device)
        counts.committed()
        #expect(counts.count(of: device) == 2)
    }

    @Test("a count read inside a transaction includes its changes; a device not counted stays uncounted")
    func countedInsideATransaction() {
        let counts = PendingEntryCounts()
        counts.check(dataVersion: 1)
        counts.add(4, for: device)
        counts.add(1, for: other)
        counts.counted(4, for: device)  // SQLite's count sees the transaction's own inserts
        counts.committed()
        #expect(counts.count(of: device) == 4)
        #expect(counts.count(of: other) == nil, "counted when next asked for, with the change in it")
    }

    @Test("another connection's commit (a new data version) forgets every count")
    func otherWriters() {
        let counts = PendingEntryCounts()
        counts.check(dataVersion: 7)
        counts.counted(3, for: device)
        counts.check(dataVersion: 7)
        #expect(counts.count(of: device) == 3)
        counts.check(dataVersion: 8)
        #expect(counts.count(of: device) == nil)
    }

    @Test("a count that would fall below zero is counted again; past the limit of devices they start over")
    func failsSafe() {
        let counts = PendingEntryCounts(maximumDevices: 1)
        counts.check(dataVersion: 1)
        counts.counted(1, for: device)
        counts.add(-2, for: device)
        counts.committed()
        #expect(counts.count(of: device) == nil)
        counts.counted(1, for: device)
        counts.counted(2, for: other)
        #expect(counts.count(of: device) == nil)
        #expect(counts.count(of: other) == 2)
    }
}
