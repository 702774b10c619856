/// A validated, normalised e-mail address (the seed's regular-expression check was inverted and
/// accepted exactly the invalid ones). Normalised: trimmed, lower-cased, so that uniqueness is
/// case-insensitive.
public struct EmailAddress: Sendable, Hashable, CustomStringConvertible {
    public let value: String

    public init(_ raw: String) throws(AuthError) {
        let trimmed = String(
            raw.drop(while: { $0.isWhitespace }).reversed().drop(while: { $0.isWhitespace }).reversed()
        ).lowercased()
        guard trimmed.count <= 254 else { throw AuthError.invalidEmail("longer than 254 characters") }
        let parts = trimmed.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw AuthError.invalidEmail("it needs exactly one @") }
        let local = parts[0]
        let domain = parts[1]
        guard !local.isEmpty, local.count <= 64 else {
            throw AuthError.invalidEmail("the part before @ must be 1–64 characters")
        }
        let localAllowed = Set("abcdefghijklmnopqrstuvwxyz0123456789.!#$%&'*+/=?^_`{|}~-")
        guard local.allSatisfy({ localAllowed.contains($0) }), !local.hasPrefix("."), !local.hasSuffix("."),
            !local.contains("..")
        else {
            throw AuthError.invalidEmail("the part before @ has a character or dot that is not allowed")
        }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2,
            labels.allSatisfy({ label in
                !label.isEmpty && label.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                    && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
            })
        else {
            throw AuthError.invalidEmail("the domain must look like example.com")
        }
        value = trimmed
    }

    public var description: String { value }
}
