/// A failure of SQLite on the relay's own write connection (`SQLiteWriteConnection`): SQLite's
/// extended result code and its message. `DatabaseOutage` classifies it as it does SQLiteNIO's
/// errors (a full disk, a busy or unreadable file).
struct SQLiteStatementFailure: Error, CustomStringConvertible {
    /// The extended result code (`SQLITE_BUSY_TIMEOUT`, `SQLITE_IOERR_WRITE`, …).
    let code: Int32
    let message: String

    /// The primary result code (`SQLITE_BUSY`, `SQLITE_IOERR`, …).
    var primaryCode: Int32 { code & 0xFF }

    var description: String { "SQLite result \(code): \(message)" }
}
