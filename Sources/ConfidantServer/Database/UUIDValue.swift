import ConfidantCrypto
import Foundation
import SQLKit

/// A UUID bound the way each database stores it: for SQLite, Fluent's text form (`uuidString`'s
/// uppercase text, written by `uppercasedString` without `snprintf`) passed as a `String`, which SQLiteKit binds directly instead of through its generic
/// `Encodable` path (on the relay's hot inserts that path cost more than SQLite itself);
/// PostgreSQL gets its native `uuid`.
struct UUIDValue: SQLExpression {
    let uuid: UUID

    init(_ uuid: UUID) { self.uuid = uuid }

    func serialize(to serializer: inout SQLSerializer) {
        if serializer.dialect.name == "sqlite" {
            serializer.write(bind: uuid.uppercasedString)
        } else {
            serializer.write(bind: uuid)
        }
    }
}

extension Date {
    /// Rounded to whole milliseconds, the precision the API shows.
    var wholeMilliseconds: Date { Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded() / 1000) }
}
