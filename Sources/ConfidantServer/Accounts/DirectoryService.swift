import Fluent
import Foundation

/// The directory: who is on this server, found by e-mail or name prefix, a page at a time.
struct DirectoryService: Sendable {
    static let maximumPage = 200

    let database: RelayDatabase

    /// Users other than `caller` whose e-mail address is verified, ordered by e-mail, after the
    /// `after` cursor; and the cursor of the next page, if there is one.
    func users(except caller: UUID, prefix: String?, after: String?, limit: Int) async throws -> (
        users: [UserRecord], next: String?
    ) {
        let limit = min(max(limit, 1), Self.maximumPage)
        let prefix = (prefix ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        var query = UserRecord.query(on: database.db).filter(\.$id != caller).filter(\.$emailVerifiedAt != nil)
            .sort(\.$email).limit(limit + 1)
        if let after {
            guard let data = Data(base64URL: after), let email = String(data: data, encoding: .utf8) else {
                throw APIFailure.malformed("`after` is not a cursor this server gave out.")
            }
            query = query.filter(\.$email > email)
        }
        if !prefix.isEmpty {
            query = query.group(.or) { $0.filter(\.$email =~ prefix).filter(\.$displayNameKey =~ prefix) }
        }
        let rows = try await query.all()
        // LIKE treats % and _ as wildcards; keep only true prefixes.
        let page = rows.prefix(limit).filter {
            prefix.isEmpty || $0.email.hasPrefix(prefix) || $0.displayNameKey.hasPrefix(prefix)
        }
        let next = rows.count > limit ? rows.prefix(limit).last.map { Data($0.email.utf8).base64URLEncoded } : nil
        return (Array(page), next)
    }
}

extension Data {
    init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}
