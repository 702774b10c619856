/// The stable, machine-readable code of every error the relay reports (`Problem.error`), shared
/// by the server that raises it and the clients that react to it; docs/PROTOCOL.md §7 lists them.
///
/// Each code has one HTTP status. A client that meets a code newer than itself sees
/// ``unrecognized`` (the server never sends it) and still has the server's message to show.
public enum APIErrorCode: String, Sendable, CaseIterable, Codable {
    // Requests
    case malformedRequest = "malformed_request"
    case notFound = "not_found"
    case methodNotAllowed = "method_not_allowed"
    case unsupportedMediaType = "unsupported_media_type"
    case tooLarge = "too_large"
    /// The request's body came too slowly (a stalled or trickling upload).
    case requestTimeout = "request_timeout"
    /// The account's storage, or the recipient's mailbox, is full.
    case quotaExceeded = "quota_exceeded"
    case conflict

    // Sessions and authorization
    case unauthenticated
    case forbidden
    case invalidCredentials = "invalid_credentials"
    /// The device did not prove that it holds the key of the identity it presented.
    case invalidProof = "invalid_proof"
    case stepUpRequired = "step_up_required"
    case rateLimited = "rate_limited"
    case lockedOut = "locked_out"

    // Accounts and devices
    case emailTaken = "email_taken"
    case registrationClosed = "registration_closed"
    case inviteRequired = "invite_required"
    case inviteInvalid = "invite_invalid"
    /// The server's operator disabled the account: it may not sign in until they enable it.
    case accountDisabled = "account_disabled"
    case weakPassword = "weak_password"
    case invalidEmail = "invalid_email"
    case invalidName = "invalid_name"
    case invalidDisplayName = "invalid_display_name"
    case invalidDeviceName = "invalid_device_name"
    case invalidIdentity = "invalid_identity"
    case unsupportedImage = "unsupported_image"
    case unknownUser = "unknown_user"

    // Messages and the stream
    case invalidEnvelope = "invalid_envelope"
    case senderMismatch = "sender_mismatch"
    case envelopeMismatch = "envelope_mismatch"
    case deviceMismatch = "device_mismatch"
    /// A send that names the message it follows (a version 2 binary send frame) when the relay
    /// does not hold that message: refused, so that it does not overtake it.
    case predecessorMissing = "predecessor_missing"
    case tooManyInFlight = "too_many_in_flight"

    // Prekeys
    case invalidPrekey = "invalid_prekey"
    case tooManyPrekeys = "too_many_prekeys"

    // Sign-in settings and transactions
    case wrongStep = "wrong_step"
    case transactionExpired = "transaction_expired"
    case transactionNotFound = "transaction_not_found"
    case invalidChain = "invalid_chain"
    case invalidMapping = "invalid_mapping"
    case invalidOperands = "invalid_operands"
    case invalidCodeLength = "invalid_code_length"
    case invalidTOTPSecret = "invalid_totp_secret"
    case invalidTOTPCode = "invalid_totp_code"
    case biometricUnavailable = "biometric_unavailable"

    // The server itself
    case mailUnavailable = "mail_unavailable"
    case storageUnavailable = "storage_unavailable"
    /// The database is down, restarting or overloaded; retry after `Retry-After`.
    case databaseUnavailable = "database_unavailable"
    case authKeyMismatch = "auth_key_mismatch"
    case `internal`

    /// Client side only: a code this client does not know (from a newer server).
    case unrecognized

    /// Decodes a code as the server wrote it; unknown codes become ``unrecognized``.
    public init(code: String) {
        self = APIErrorCode(rawValue: code) ?? .unrecognized
    }

    /// The HTTP status the relay answers with this code.
    public var httpStatus: Int {
        switch self {
        case .malformedRequest, .invalidEmail, .invalidName, .invalidDisplayName, .invalidDeviceName, .invalidIdentity,
            .weakPassword,
            .invalidEnvelope, .envelopeMismatch, .invalidPrekey, .tooManyPrekeys, .invalidChain, .invalidMapping,
            .invalidOperands, .invalidCodeLength, .invalidTOTPSecret, .invalidTOTPCode, .biometricUnavailable:
            400
        case .unauthenticated, .invalidCredentials, .invalidProof: 401
        case .forbidden, .senderMismatch, .stepUpRequired, .registrationClosed, .inviteRequired, .inviteInvalid,
            .accountDisabled:
            403
        case .notFound, .unknownUser, .transactionNotFound: 404
        case .methodNotAllowed: 405
        case .requestTimeout: 408
        case .conflict, .emailTaken, .deviceMismatch, .predecessorMissing, .wrongStep: 409
        case .transactionExpired: 410
        case .tooLarge, .quotaExceeded: 413
        case .unsupportedMediaType, .unsupportedImage: 415
        case .rateLimited, .lockedOut, .tooManyInFlight: 429
        case .internal, .authKeyMismatch, .unrecognized: 500
        case .mailUnavailable, .storageUnavailable, .databaseUnavailable: 503
        }
    }

    /// Whether the same request may succeed later without any change (the client retries these).
    public var isTransient: Bool {
        switch self {
        case .rateLimited, .lockedOut, .tooManyInFlight, .mailUnavailable, .storageUnavailable, .databaseUnavailable,
            .internal, .requestTimeout:
            true
        default: false
        }
    }
}
