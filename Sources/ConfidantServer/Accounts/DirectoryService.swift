import Fluent
import Foundation

/// The directory: who is on this server, found by a prefix of their e-mail, their name or a word
/// of it ("dyl" finds Bob Dylan), a page at a time.
struct DirectoryService: Sendable {
    static let maximumPage = 200

    let database: RelayDatabase

    /// Users other than `caller` whose e-mail address is verified and who are not disabled,
    /// ordered by e-mail, after the `after` cursor; and the cursor of the next page, if any.
    func users(except caller: UUID, prefix: String?, after: String?, limit: Int) async throws -> (
        users: [UserRecord], next: String?
    ) {
        let limit = min(max(limit, 1), Self.maximumPage)
        let prefix = (prefix ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        var query = UserRecord.query(on: database.db).filter(\.$id != caller).filter(\.$emailVerifiedAt != nil)
            .filter(\.$disabledAt == nil)
            .sort(\.$email).limit(limit + 1)
        if let after {
            guard let email = Self.email(inCursor: after) else {
                throw APIFailure.malformed("`after` is not a cursor this server gave out.")
            }
            query = query.filter(\.$email > email)
        }
        if !prefix.isEmpty {
            query = query.group(.or) {
                $0.filter(\.$email =~ prefix).filter(\.$displayNameKey =~ prefix)
                    .filter(\.$displayNameKey ~~ (" " + prefix))
            }
        }
        let rows = try await query.all()
        // LIKE treats % and _ as wildcards; keep only true prefixes.
        let page = rows.prefix(limit).filter {
            prefix.isEmpty || $0.email.hasPrefix(prefix) || $0.displayNameKey.hasPrefix(prefix)
                || $0.displayNameKey.contains(" " + prefix)
        }
        let next = rows.count > limit ? rows.prefix(limit).last.map { Data($0.email.utf8).base64URLEncoded } : nil
        return (Array(page), next)
    }
}

extension DirectoryService {
    /// The e-mail a page cursor names: only the exact text this server writes for one (base64url of
    /// an address of at most 320 bytes, with an `@` and no control characters), so that made-up
    /// cursors are refused as everywhere else.
    static func email(inCursor cursor: String) -> String? {
        guard cursor.utf8.count <= 440, let data = Data(base64URL: cursor), data.count <= 320,
            let email = String(data: data, encoding: .utf8), email.contains("@"),
            !email.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }),
            data.base64URLEncoded == cursor
        else { return nil }
        return email
    }
}

extension Data {
    init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}
