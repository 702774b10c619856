import SQLKit

/// A table or column name of the relay's own schema, quoted once when it is made, for the
/// statements of the message path.
///
/// Why not SQLKit's `SQLIdentifier`: it casts the dialect's quote and escapes the name every time
/// it is written, and on Linux its escaping goes through the standard library's generic
/// `replacing`, for every identifier of every statement. Both dialects the relay speaks, SQLite and
/// PostgreSQL, quote identifiers with `"` (checked by `SQLNameTests`), so the quoted text is made
/// here, and escaped as `SQLIdentifier` does for the rare name with a quote in it.
struct SQLName: SQLExpression {
    let quoted: String

    init(_ name: String) {
        let hasQuote = name.utf8.contains(UInt8(ascii: "\""))
        let escaped =
            hasQuote ? name.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"") : name
        quoted = "\"" + escaped + "\""
    }

    func serialize(to serializer: inout SQLSerializer) {
        serializer.write(quoted)
    }

    /// `table.column`.
    static func column(_ name: String, of table: String) -> SQLColumn {
        SQLColumn(SQLName(name), table: SQLName(table))
    }
}
