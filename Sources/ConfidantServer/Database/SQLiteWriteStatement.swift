import Foundation
import VaporCSQLite

/// A prepared statement of a `SQLiteWriteConnection`, valid until the connection's next
/// `statement(_:)`: bind its parameters (from 1), step through its rows, read their columns.
struct SQLiteWriteStatement {
    let pointer: OpaquePointer
    let connection: SQLiteWriteConnection

    /// SQLite copies what is bound, so the caller's buffers may go away at once.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    func bind(_ index: Int32, _ text: String) throws(SQLiteStatementFailure) {
        var text = text
        let result = text.withUTF8 {
            sqlite_nio_sqlite3_bind_text64(
                pointer, index, $0.baseAddress, UInt64($0.count), Self.transient, UInt8(SQLITE_UTF8))
        }
        try check(result)
    }

    /// As the relay's other connections store UUIDs: Foundation's uppercase text, written on the
    /// stack, without a `String` for each of a message's UUIDs.
    func bind(_ index: Int32, _ uuid: UUID) throws(SQLiteStatementFailure) {
        var text: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)  // 40 bytes on the stack
        let result = withUnsafeMutableBytes(of: &text) { bytes in
            uuid.writeUppercasedUTF8(into: bytes)
            return sqlite_nio_sqlite3_bind_text64(
                pointer, index, bytes.baseAddress, 36, Self.transient, UInt8(SQLITE_UTF8))
        }
        try check(result)
    }

    func bind(_ index: Int32, _ uuid: UUID?) throws(SQLiteStatementFailure) {
        guard let uuid else { return try check(sqlite_nio_sqlite3_bind_null(pointer, index)) }
        try bind(index, uuid)
    }

    func bind(_ index: Int32, _ value: Int64) throws(SQLiteStatementFailure) {
        try check(sqlite_nio_sqlite3_bind_int64(pointer, index, value))
    }

    /// As SQLiteNIO stores dates: seconds since 1970 as a REAL.
    func bind(_ index: Int32, _ date: Date) throws(SQLiteStatementFailure) {
        try check(sqlite_nio_sqlite3_bind_double(pointer, index, date.timeIntervalSince1970))
    }

    func bind(_ index: Int32, _ data: Data) throws(SQLiteStatementFailure) {
        let result = data.withUnsafeBytes {
            // An empty blob still needs a non-null pointer, or SQLite binds NULL.
            sqlite_nio_sqlite3_bind_blob64(
                pointer, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), UInt64($0.count), Self.transient)
        }
        try check(result)
    }

    /// Makes the statement ready to run again. Its parameters keep their values: every use binds
    /// all of them. `sqlite3_clear_bindings` is not called because it marks a statement whose plan
    /// looked at a bound value (the directory's device query does) as expired, and SQLite then
    /// parses and plans it again on the next step.
    func reset() {
        sqlite_nio_sqlite3_reset(pointer)
    }

    /// How many times SQLite has prepared this statement again since it was first prepared.
    var reprepareCount: Int32 {
        sqlite_nio_sqlite3_stmt_status(pointer, SQLITE_STMTSTATUS_REPREPARE, 0)
    }

    /// Steps once: true when a row is ready to read, false when the statement is done.
    func step() throws(SQLiteStatementFailure) -> Bool {
        switch sqlite_nio_sqlite3_step(pointer) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let result: throw connection.failure(result)
        }
    }

    /// Steps to the end (an `INSERT`, `UPDATE` or `DELETE` without `RETURNING`).
    func run() throws(SQLiteStatementFailure) {
        while try step() {}
    }

    func isNull(_ column: Int32) -> Bool { sqlite_nio_sqlite3_column_type(pointer, column) == SQLITE_NULL }

    func int64(_ column: Int32) -> Int64 { sqlite_nio_sqlite3_column_int64(pointer, column) }

    /// A UUID column as the relay stores it (text); nil for NULL.
    func uuid(_ column: Int32) throws(SQLiteStatementFailure) -> UUID? {
        guard !isNull(column), let text = sqlite_nio_sqlite3_column_text(pointer, column) else { return nil }
        let count = Int(sqlite_nio_sqlite3_column_bytes(pointer, column))
        guard let uuid = UUID(hyphenatedUTF8: UnsafeBufferPointer(start: text, count: count)) else {
            throw SQLiteStatementFailure(code: SQLITE_MISMATCH, message: "A stored UUID is not one.")
        }
        return uuid
    }

    /// A date column as SQLiteNIO reads it back: to the microsecond since 2001, so that a date
    /// read here equals the same date read through Fluent.
    func date(_ column: Int32) -> Date {
        let seconds = sqlite_nio_sqlite3_column_double(pointer, column) - Date.timeIntervalBetween1970AndReferenceDate
        return Date(timeIntervalSinceReferenceDate: (seconds * 1e6).rounded() / 1e6)
    }

    private func check(_ result: Int32) throws(SQLiteStatementFailure) {
        guard result == SQLITE_OK else { throw connection.failure(result) }
    }
}
