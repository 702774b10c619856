import ArgumentParser
import ConfidantCrypto
import Crypto
import Foundation
import GRDB

/// Accounts for idle streams, and unread entries for mailboxes (`backlog`), written into the child
/// relay's SQLite file directly, as `pgbench -i` fills its tables: signing up through the API
/// hashes each password slowly on purpose, and 100,000 of them would take hours. Each account
/// copies every column of one account that did sign up (its user, device and session rows, read
/// with `PRAGMA table_info`, so a column added later is copied too) and replaces what must be its
/// own: ids, e-mail, display name, the device's public identity and the session's token hash. The
/// relay itself is unchanged: it reads these rows as it reads any others. SQLite only, but for
/// the backlog, which PostgreSQL gets through `psql`.
enum BenchSeed {
    /// Writes `count` accounts modelled on `template` into the database at `path` (the relay may
    /// be running: it is another process, and the file is in WAL mode).
    static func accounts(_ count: Int, like template: BenchUser, in path: String) throws -> [BenchUser] {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        let database = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? database.close() }
        let identities = try (0..<count).map { _ in try PrivateIdentity.generate() }
        return try database.write { db in
            let users = try CopiedRow(
                table: "users", key: "id", replacing: ["id", "email", "display_name", "display_name_key"], in: db)
            let devices = try CopiedRow(
                table: "devices", key: "user_id", replacing: ["id", "user_id", "device_id", "identity"], in: db)
            let sessions = try CopiedRow(
                table: "sessions", key: "user_id", replacing: ["id", "user_id", "device_id", "token_hash"], in: db)
            let templateID = template.id.uuidString
            var seeded: [BenchUser] = []
            seeded.reserveCapacity(count)
            for (index, identity) in identities.enumerated() {
                let user = UUID.timeOrdered()
                var tokenBytes = [UInt8](repeating: 0, count: 32)
                for offset in tokenBytes.indices { tokenBytes[offset] = UInt8.random(in: .min ... .max) }
                let token = Data(tokenBytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
                let name = "Idle \(index)"
                try users.insert(
                    [
                        user.uuidString, "idle\(index)-\(user.uuidString.prefix(8).lowercased())@example.com", name,
                        name.lowercased(),
                    ], copying: templateID, in: db)
                try devices.insert(
                    [
                        UUID.timeOrdered().uuidString, user.uuidString, identity.deviceID.uuidString,
                        identity.publicIdentity.serialized,
                    ], copying: templateID, in: db)
                try sessions.insert(
                    [
                        UUID.timeOrdered().uuidString, user.uuidString, identity.deviceID.uuidString,
                        Data(SHA256.hash(data: Data(token.utf8))),
                    ], copying: templateID, in: db)
                seeded.append(BenchUser(id: user, identity: identity, token: token))
            }
            return seeded
        }
    }

    /// Writes `count` envelope entries from `sender` into each receiver's mailbox, as the relay
    /// stores them (its cursors from the table's counter, times in seconds, UUIDs as Foundation's
    /// text); returns the last cursor written, after which the receivers resume.
    static func backlog(_ count: Int, for receivers: [BenchUser], from sender: BenchUser, in path: String) throws
        -> Int64
    {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        let database = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? database.close() }
        let payload = Data(count: 1_280)
        return try database.write { db in
            let insert = try db.makeStatement(
                sql: """
                    INSERT INTO mailbox (recipient_user_id, recipient_device_id, kind, sender_user_id, sender_device_id, \
                    message_id, payload, received_at) VALUES (?, ?, 'envelope', ?, ?, ?, ?, ?)
                    """)
            let now = Date().timeIntervalSince1970
            for receiver in receivers {
                for _ in 0..<count {
                    try insert.execute(arguments: [
                        receiver.id.uuidString, receiver.identity.deviceID.uuidString, sender.id.uuidString,
                        sender.identity.deviceID.uuidString, UUID().uuidString, payload, now,
                    ])
                }
            }
            return try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'mailbox'") ?? 0
        }
    }

    /// The same on PostgreSQL at `url`, through `psql` (the benchmark's tools link no PostgreSQL
    /// client of their own): one `INSERT … SELECT` over `generate_series` per receiver, the rows
    /// made by the server. Returns the largest cursor afterwards, after which the receivers resume.
    static func backlog(_ count: Int, for receivers: [BenchUser], from sender: BenchUser, postgres url: String)
        throws -> Int64
    {
        // Only UUIDs and integers this process made go into the text: nothing to quote.
        let inserts = receivers.map { receiver in
            """
            INSERT INTO mailbox (recipient_user_id, recipient_device_id, kind, sender_user_id, sender_device_id, \
            message_id, payload, received_at) SELECT '\(receiver.id.uuidString)', \
            '\(receiver.identity.deviceID.uuidString)', 'envelope', '\(sender.id.uuidString)', \
            '\(sender.identity.deviceID.uuidString)', gen_random_uuid(), decode(repeat('00', 1280), 'hex'), now() \
            FROM generate_series(1, \(count));
            """
        }
        let output = try psql(
            url, "BEGIN;\n" + inserts.joined(separator: "\n") + "\nCOMMIT;\nSELECT max(\"cursor\") FROM mailbox;")
        guard let last = output.split(separator: "\n").last.flatMap({ Int64($0) }) else {
            throw ValidationError("psql answered no last cursor: \(output)")
        }
        return last
    }

    /// Runs `script` with `psql` against `url`, stopping at the first error; its output, unaligned.
    private static func psql(_ url: String, _ script: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["psql", "--no-psqlrc", "-v", "ON_ERROR_STOP=1", "-qAt", url]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(script.utf8))
        try input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ValidationError(
                "psql failed (status \(process.terminationStatus)); is PostgreSQL's client installed?")
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `INSERT INTO table (every column) SELECT ?, …, other columns FROM table WHERE key = ?`.
    private struct CopiedRow {
        let statement: Statement

        init(table: String, key: String, replacing: [String], in db: Database) throws {
            let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(\(table))").map { $0["name"] as String }
            guard Set(replacing).isSubset(of: columns) else {
                throw ValidationError(
                    "The relay's table \(table) has no column \(Set(replacing).subtracting(columns)).")
            }
            let values = columns.map { column in
                replacing.firstIndex(of: column).map { "?\($0 + 1)" } ?? "\"\(column)\""
            }
            statement = try db.makeStatement(
                sql: """
                    INSERT INTO "\(table)" (\(columns.map { "\"\($0)\"" }.joined(separator: ", "))) \
                    SELECT \(values.joined(separator: ", ")) FROM "\(table)" WHERE "\(key)" = ?\(replacing.count + 1) \
                    ORDER BY rowid DESC LIMIT 1
                    """)
        }

        func insert(_ values: [any DatabaseValueConvertible], copying key: String, in db: Database) throws {
            try statement.execute(arguments: StatementArguments(values + [key]))
            guard db.changesCount == 1 else { throw ValidationError("The template account has no such row to copy.") }
        }
    }
}
