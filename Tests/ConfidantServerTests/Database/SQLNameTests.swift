import FluentPostgresDriver
import FluentSQLiteDriver
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import ConfidantServer

/// `SQLName` writes what SQLKit's `SQLIdentifier` writes, in both dialects the relay speaks: it
/// only does the quoting once.
@Suite("SQL names")
struct SQLNameTests {
    /// A database that only serializes, in `dialect`.
    private struct Serializing: SQLDatabase {
        let dialect: any SQLDialect
        let eventLoop: any EventLoop = EmbeddedEventLoop()
        var logger: Logger { Logger(label: "sql-name-tests") }

        func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void)
            -> EventLoopFuture<Void>
        {
            eventLoop.makeSucceededVoidFuture()
        }

        func text(_ expression: any SQLExpression) -> String { serialize(expression).sql }
    }

    private static let dialects: [any SQLDialect] = [SQLiteDialect(), PostgresDialect()]

    @Test("a name is written as SQLIdentifier writes it, quotes in it doubled", arguments: 0..<2)
    func quotedLikeSQLKit(dialect: Int) {
        let database = Serializing(dialect: Self.dialects[dialect])
        for name in ["mailbox_entries", "recipient_user_id", "id", "we\"ird", "\"", "\"\"x\"", ""] {
            #expect(database.text(SQLName(name)) == database.text(SQLIdentifier(name)), "\(name)")
        }
        #expect(
            database.text(SQLName.column("device_id", of: "devices"))
                == database.text(SQLColumn("device_id", table: "devices")))
    }

    @Test("a statement built with names is the statement built from strings", arguments: 0..<2)
    func sameStatement(dialect: Int) throws {
        let database = Serializing(dialect: Self.dialects[dialect])
        let user = UUID()
        let named = database.select()
            .columns([SQLName("cursor"), SQLName("payload")])
            .column(SQLName.column("id", of: "users"), as: SQLName("known_user"))
            .from(SQLName("mailbox_entries"))
            .where(SQLName("recipient_user_id"), .equal, SQLBind(user))
            .where(SQLName("cursor"), .greaterThan, SQLBind(Int64(7)))
            .orderBy(SQLName("cursor"), SQLDirection.ascending)
        let strings = database.select()
            .columns(["cursor", "payload"])
            .column(SQLColumn("id", table: "users"), as: "known_user")
            .from("mailbox_entries")
            .where("recipient_user_id", .equal, user)
            .where("cursor", .greaterThan, Int64(7))
            .orderBy("cursor")
        #expect(database.text(named.select) == database.text(strings.select))
        #expect(database.text(named.select).contains("\"mailbox_entries\""))
    }
}
