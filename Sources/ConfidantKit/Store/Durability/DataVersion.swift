import GRDB

extension Database {
    /// `PRAGMA data_version`: moves when another connection to the file commits (another process
    /// on the profile), never for this connection's own commits.
    func dataVersion() throws -> Int64 {
        try Int64.fetchOne(cachedStatement(sql: "PRAGMA data_version")) ?? 0
    }
}
