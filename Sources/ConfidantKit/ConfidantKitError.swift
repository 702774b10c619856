import ConfidantAPI
import ConfidantCrypto
import Foundation

/// What can go wrong in the client library, each saying what went wrong; the app or the CLI
/// adds what to do about it.
public enum ConfidantKitError: Error, Equatable, CustomStringConvertible {
    /// The profile has no account yet.
    case notSignedIn
    /// The profile already belongs to another account.
    case profileBelongsToOther(email: String)
    /// The server rejected the session token (expired, revoked, or the account is gone).
    case sessionExpired
    /// The server could not be reached.
    case serverUnreachable(server: String, reason: String)
    /// The server answered with a problem.
    case server(status: Int, code: APIErrorCode, message: String)
    /// The server's answer could not be read.
    case badResponse(String)
    /// No user with this e-mail on the server.
    case unknownUser(String)
    /// The peer's keys changed after you verified them; the send needs confirmation.
    case keyChangedSinceVerification(name: String)
    /// The message does not fit in one envelope.
    case messageTooLarge(bytes: Int, limit: Int)
    /// More files than one message carries.
    case tooManyAttachments(count: Int, limit: Int)
    case emptyMessage
    case invalidServerURL(String)
    /// Plain `http://` to a server that is not on this machine: passwords and tokens would cross
    /// the network unencrypted.
    case insecureServerURL(String)
    /// The local store is damaged or was written by something else.
    case storeDamaged(String)
    /// A retry of a message that is not in the failed state.
    case notRetryable(UUID)
    /// The account signs in with several steps and nothing was given to answer them.
    case stepUpRequired
    /// `removeDevice` was asked to remove the device it runs on; that is `logout`.
    case cannotRemoveThisDevice
    /// The server handed out prekeys the peer's device did not sign: no session is started with them.
    case untrustedPrekeys(name: String, reason: String)
    /// A profile picture that cannot be used; the reason says why.
    case invalidAvatar(String)
    /// A file to attach that cannot be read.
    case attachmentUnreadable(String)
    /// A file larger than the server stores.
    case attachmentTooLarge(name: String, bytes: Int, limit: Int)
    /// An attachment that cannot be fetched any more; the reason says why.
    case attachmentUnavailable(name: String, reason: String)
    /// An attachment whose bytes are not what its message says: nothing was written out.
    case attachmentDamaged(name: String, reason: String)
    /// No message with this id (or no attachment at that position) on this device.
    case messageNotFound(UUID)
    /// A message id that more than one conversation has (senders choose their ids): name the
    /// conversation too.
    case messageInSeveralConversations(UUID)
    /// An edit or deletion of a message this account did not write.
    case notYourMessage(UUID)
    /// A reaction that is not one emoji.
    case notAReaction(String)
    /// A disappearing timer outside the allowed range.
    case invalidTimer(Int)
    /// A group this device holds no changes of.
    case unknownGroup(UUID)
    /// A message to a group this account is not (or no longer) a member of.
    case notGroupMember(String)

    public var description: String {
        switch self {
        case .notSignedIn: "this profile has no account yet"
        case .profileBelongsToOther(let email): "this profile belongs to \(email)"
        case .sessionExpired:
            "the server no longer accepts this profile's session (it expired, or this device was signed out)"
        case .serverUnreachable(let server, let reason): "cannot reach the server at \(server): \(reason)"
        case .server(let status, let code, let message): "the server refused (\(status) \(code.rawValue)): \(message)"
        case .badResponse(let why): "the server's answer could not be read (\(why))"
        case .unknownUser(let email): "no user \(email) on this server"
        case .keyChangedSinceVerification(let name): "\(name)'s security key changed after you verified it"
        case .messageTooLarge(let bytes, let limit): "the message is \(bytes) bytes; the limit is \(limit) bytes"
        case .tooManyAttachments(let count, let limit):
            "the message has \(count) files; one message carries at most \(limit)"
        case .emptyMessage: "the message is empty"
        case .invalidServerURL(let url): "\(url) is not a server address; use http://host:port or https://host"
        case .insecureServerURL(let url):
            "\(url) is plain HTTP to another machine: passwords and tokens would cross the network unencrypted; use https://"
        case .storeDamaged(let why): "the local store is damaged: \(why)"
        case .cannotRemoveThisDevice: "this is the device you are using; sign it out instead of removing it"
        case .invalidAvatar(let why): "that picture cannot be used: \(why)"
        case .attachmentUnreadable(let path): "cannot read the file \(path)"
        case .attachmentTooLarge(let name, let bytes, let limit):
            "\(name) is \(Self.bytes(bytes)); the server takes attachments up to \(Self.bytes(limit))"
        case .attachmentUnavailable(let name, let why): "\(name) cannot be fetched: \(why)"
        case .attachmentDamaged(let name, let why): "\(name) was not saved: \(why)"
        case .messageInSeveralConversations(let id):
            "more than one conversation has a message \(id.canonicalString); name the conversation too"
        case .messageNotFound(let id):
            "there is no message \(id.canonicalString) (or no such attachment) on this device"
        case .notYourMessage(let id):
            "message \(id.canonicalString) was not written by you; only its author may change it"
        case .notAReaction(let text):
            "\"\(text.prefix(40))\" is not one emoji; a reaction is a single emoji such as \(ReactionEmoji.offered.joined(separator: " "))"
        case .invalidTimer(let seconds):
            "a disappearing timer of \(seconds) s is outside \(DisappearingTimer.shortest) s to \(DisappearingTimer.longest / 604_800) weeks"
        case .stepUpRequired:
            "this account signs in with several steps (arithmetic, e-mail code, TOTP) and nothing was given to answer them"
        case .untrustedPrekeys(let name, let reason):
            "not sending: the server handed out prekeys for \(name) that fail verification (\(reason)); the server may be tampering"
        case .notRetryable(let id): "message \(id.canonicalString) has not failed, so there is nothing to retry"
        case .unknownGroup(let id): "this device knows no group \(id.canonicalString)"
        case .notGroupMember(let name): "you are not a member of \(name)"
        }
    }

    private static func bytes(_ count: Int) -> String {
        ByteCountFormatter.string(fromByteCount: Int64(count), countStyle: .file)
    }

    /// The server's error code, when the server refused.
    public var serverCode: APIErrorCode? {
        if case .server(_, let code, _) = self { return code }
        return nil
    }

    /// Whether the same request may succeed later unchanged: the server was unreachable, busy or
    /// briefly unable to store. Messages that meet these stay in the outbox and are retried.
    public var isTransient: Bool {
        switch self {
        case .serverUnreachable: true
        case .server(_, let code, _): code.isTransient
        default: false
        }
    }
}
