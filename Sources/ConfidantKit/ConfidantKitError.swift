import ConfidantCrypto
import Foundation

/// What can go wrong in the client library, each with a message a user can act on.
public enum ConfidantKitError: Error, Equatable, CustomStringConvertible {
    /// The profile has no account yet.
    case notSignedIn
    /// The profile already belongs to another account.
    case profileBelongsToOther(email: String)
    /// The server rejected the session token (expired, revoked, or the account is gone).
    case sessionExpired
    /// The server could not be reached.
    case serverUnreachable(server: String, reason: String)
    /// The server answered with a problem (`code` is its stable error code).
    case server(status: Int, code: String, message: String)
    /// No user with this e-mail on the server.
    case unknownUser(String)
    /// The peer's keys changed after you verified them; the send needs confirmation.
    case keyChangedSinceVerification(name: String)
    /// The message does not fit in one envelope.
    case messageTooLarge(bytes: Int, limit: Int)
    case emptyMessage
    case invalidServerURL(String)
    /// The local store is damaged or was written by something else.
    case storeDamaged(String)
    /// A retry of a message that is not in the failed state.
    case notRetryable(UUID)
    /// The account signs in with several steps and nothing was given to answer them.
    case stepUpRequired
    /// The server handed out prekeys the peer's device did not sign: no session is started with them.
    case untrustedPrekeys(name: String, reason: String)

    public var description: String {
        switch self {
        case .notSignedIn: return "this profile has no account yet; run `confidant register` or `confidant login`"
        case .profileBelongsToOther(let email): return "this profile belongs to \(email); use another --profile for a second account"
        case .sessionExpired: return "the server no longer accepts this profile's session (expired or signed out); run `confidant login`"
        case .serverUnreachable(let server, let reason): return "cannot reach the server at \(server): \(reason)"
        case .server(let status, let code, let message): return "the server refused (\(status) \(code)): \(message)"
        case .unknownUser(let email): return "no user \(email) on this server; `confidant users --search` lists who is there"
        case .keyChangedSinceVerification(let name):
            return "\(name)'s security key changed after you verified it; compare safety numbers with `confidant verify` or confirm the send"
        case .messageTooLarge(let bytes, let limit): return "the message is \(bytes) bytes; the limit is \(limit) bytes"
        case .emptyMessage: return "the message is empty"
        case .invalidServerURL(let url): return "\(url) is not a server address; use http://host:port or https://host"
        case .storeDamaged(let why): return "the local store is damaged: \(why)"
        case .stepUpRequired: return "this account signs in with several steps (arithmetic, e-mail code, TOTP); run `confidant login` to answer them"
        case .untrustedPrekeys(let name, let reason):
            return "not sending: the server handed out prekeys for \(name) that fail verification (\(reason)); the server may be tampering"
        case .notRetryable(let id): return "message \(id.canonicalString) has not failed, so there is nothing to retry"
        }
    }

    /// A stable code for scripts and field mapping.
    public var serverCode: String? {
        if case .server(_, let code, _) = self { return code }
        return nil
    }
}
