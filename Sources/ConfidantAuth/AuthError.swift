/// Errors from sign-in methods, phrased for the person signing in.
public enum AuthError: Error, Equatable, CustomStringConvertible {
    case invalidMapping(String)
    case invalidChallenge(String)
    case invalidEmail(String)
    case invalidCodeLength(Int)
    case invalidSecret

    public var description: String {
        switch self {
        case .invalidMapping(let why): return "invalid operator mapping: \(why)"
        case .invalidChallenge(let why): return "invalid challenge: \(why)"
        case .invalidEmail(let why): return "invalid e-mail address: \(why)"
        case .invalidCodeLength(let n): return "a one-time code has 4 to 8 characters, not \(n)"
        case .invalidSecret: return "the TOTP secret is not valid base32"
        }
    }
}
