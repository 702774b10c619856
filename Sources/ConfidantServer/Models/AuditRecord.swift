import Fluent
import Foundation

/// One administrative action (`confidant admin …`), kept for `admin audit`. The sequence number
/// orders them; an action that ended sessions also carries its revocation, which the other relay
/// processes on the same SQLite file read from here (`RevocationFeed`).
final class AuditRecord: Model, @unchecked Sendable {
    static let schema = "admin_audit"

    /// Column names, for the fields below, the migration and SQL alike.
    enum Column {
        static let sequence = "sequence"
        static let at = "at"
        static let actor = "actor"
        static let action = "action"
        static let target = "target"
        static let detail = "detail"
        static let revocation = "revocation"
    }

    @ID(custom: .string(Column.sequence), generatedBy: .database) var id: Int64?
    @Field(key: .string(Column.at)) var at: Date
    @Field(key: .string(Column.actor)) var actor: String
    @Field(key: .string(Column.action)) var action: String
    @Field(key: .string(Column.target)) var target: String
    @OptionalField(key: .string(Column.detail)) var detail: String?
    /// `Revocation.notification` of the sessions the action ended, if it ended any.
    @OptionalField(key: .string(Column.revocation)) var revocation: String?

    init() {}

    init(at: Date, actor: String, action: AdminAction, target: String, detail: String?, revocation: Revocation?) {
        self.at = at
        self.actor = actor
        self.action = action.rawValue
        self.target = target
        self.detail = detail
        self.revocation = revocation?.notification
    }
}
