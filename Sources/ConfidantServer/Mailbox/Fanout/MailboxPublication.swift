import ConfidantCrypto
import Fluent
import Foundation
import SQLKit
import Synchronization

/// Mailbox entries one write transaction stored, for the devices' streams once it commits: the
/// rows themselves — on PostgreSQL with what each device's stream must have had before them
/// (`MailboxHandOver`) — or, where PostgreSQL's answer could not be matched to the entries, only
/// whose mailboxes they went to, whose streams then read them.
final class MailboxPublication: Sendable {
    private struct Stored {
        var entries: [AddressedEntry] = []
        var following: [DeviceAddress: Int64] = [:]
        var addresses: Set<DeviceAddress> = []
    }

    private let stored = Mutex(Stored())

    /// The rows to hand over, in the order stored.
    var entries: [AddressedEntry] { stored.withLock { $0.entries } }
    /// PostgreSQL: for each device among the entries' recipients, the greatest cursor its mailbox
    /// held before the transaction's first entry for it (`MailboxHandOver.following`).
    var following: [DeviceAddress: Int64] { stored.withLock { $0.following } }
    /// Mailboxes written to whose streams must read what was stored.
    var addresses: Set<DeviceAddress> { stored.withLock { $0.addresses } }

    /// SQLite: rows the one writer stored, which every stream can take.
    func add(_ entries: [AddressedEntry]) {
        stored.withLock { $0.entries += entries }
    }

    func add(_ handOver: MailboxHandOver) {
        stored.withLock { stored in
            stored.entries += handOver.entries
            // A device's first rows in the transaction say what came before all of its rows.
            stored.following.merge(handOver.following) { earlier, _ in earlier }
        }
    }

    func add(_ addresses: [DeviceAddress]) {
        stored.withLock { $0.addresses.formUnion(addresses) }
    }

    /// Forgets entries for `userID`'s devices that the same transaction deleted again.
    func withdraw(user userID: UUID) {
        stored.withLock { stored in
            stored.entries.removeAll { $0.recipient.userID == userID }
            stored.following = stored.following.filter { $0.key.userID != userID }
            stored.addresses = stored.addresses.filter { $0.userID != userID }
        }
    }
}

/// Writes transactions whose mailbox entries reach the devices' streams once they commit: on
/// SQLite the stored rows go to this instance's streams before the next writer starts, so every
/// stream gets its entries in cursor order without reading them back; on PostgreSQL, where other
/// instances write too, the rows go to this instance's streams that had everything before them
/// (`MailboxHandOver`), and the other streams here and those of the other instances (through
/// NOTIFY) are woken to read.
struct MailboxPublisher: Sendable {
    let database: RelayDatabase
    let hub: MailboxHub

    /// `singleStatement`: as for `RelayDatabase.write`.
    func write<T: Sendable>(
        singleStatement: Bool = false,
        _ body: @escaping @Sendable (any Database, MailboxPublication) async throws -> T
    ) async throws -> T {
        let publication = MailboxPublication()
        let database = database
        let hub = hub
        return try await database.write(
            singleStatement: singleStatement, { try await body($0, publication) },
            committed: { _ in
                if database.isPostgres {
                    hub.deliver(publication.entries, following: publication.following)
                    hub.wake(publication.addresses)
                } else {
                    hub.deliver(publication.entries)
                }
            })
    }

    /// SQLite, on the relay's own write connection's thread: as `write`, as one transaction there
    /// (`RelayDatabase.writeOnOwnConnection`); `body` adds the entries it stored to the publication.
    func writeOnOwnConnection<T>(
        on thread: borrowing SQLiteWriter.OnThread, _ body: (SQLiteWriteConnection, MailboxPublication) throws -> T
    ) throws -> T {
        let publication = MailboxPublication()
        return try database.writeOnOwnConnection(
            on: thread, { try body($0, publication) }, committed: { _ in hub.deliver(publication.entries) })
    }

    /// Within `write`: stores entries for `publication` to hand over after commit. On PostgreSQL
    /// it first holds per-device locks until commit, so that entries for one device commit in
    /// cursor order (a stream reading "after cursor c" can then never miss an entry that commits
    /// later with a smaller cursor), and hands the stored rows over with the greatest cursor each
    /// device had before them (`MailboxTable.insertHandingOver`). SQLite has one writer anyway.
    /// `lastCursor` (SQLite): the mailbox's counter, if the transaction read it already.
    /// `companions`: other inserts of the transaction, run with the entries' (in their statement
    /// on PostgreSQL, `MailboxTable.insertHandingOver(_:alongside:folding:on:)`). `folded`
    /// (PostgreSQL): devices among the entries' recipients whose counts to fold into one row
    /// (`MailboxCountTable.folding`).
    /// `locks` (PostgreSQL): locks the transaction took already, with their notice; when they
    /// cover the entries' devices, none are taken here.
    func store(
        _ entries: [NewMailboxEntry], in db: any Database, publishing publication: MailboxPublication,
        lastCursor: Int64? = nil, alongside companions: [SQLInsert] = [], foldingCounts folded: [DeviceAddress] = [],
        holding locks: MailboxDeviceLocks? = nil
    ) async throws {
        guard !entries.isEmpty else { return try await RelayDatabase.run(companions, on: db) }
        if database.isPostgres {
            // Locks and notice in one statement, unless the transaction took them already with
            // its directory (a send group): a NOTIFY of its own after the commit, and the locks
            // in a statement of their own, were two round trips more per group.
            if locks?.cover(entries) != true {
                var select = try RelayDatabase.sql(db).select()
                for column in MailboxDeviceLocks(entries.map(\.recipient), instance: hub.instance).columns {
                    select = select.column(column.value, as: SQLName(column.name))
                }
                try await select.run()
            }
            if let handOver = try await MailboxTable.insertHandingOver(
                entries, alongside: companions, folding: folded, on: db)
            {
                publication.add(handOver)
            } else {
                publication.add(entries.map(\.recipient))
            }
        } else {
            publication.add(try await MailboxTable.insertNumbered(entries, lastCursor: lastCursor, on: db))
            try await RelayDatabase.run(companions, on: db)
        }
    }
}
