import Vapor

/// An error the API reports as a `Problem`: an HTTP status, a stable code and a message for people.
public struct APIFailure: Error, CustomStringConvertible, Sendable, Equatable {
    public let status: HTTPResponseStatus
    /// Stable, machine-readable, snake_case (documented in docs/PROTOCOL.md §7).
    public let code: String
    public let message: String
    /// Seconds for `Retry-After` on 429.
    public let retryAfter: Int?

    public init(_ status: HTTPResponseStatus, _ code: String, _ message: String, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    public var description: String { "\(code): \(message)" }

    static func malformed(_ message: String) -> APIFailure { .init(.badRequest, "malformed_request", message) }
    static func notFound(_ what: String) -> APIFailure { .init(.notFound, "not_found", "\(what) does not exist or is not yours to see.") }
    static let unauthenticated = APIFailure(.unauthorized, "unauthenticated", "Sign in first: send `Authorization: Bearer <token>` with a valid, unexpired session token.")
    /// Anything unexpected, told without detail (never a stack trace).
    static let internalError = APIFailure(.internalServerError, "internal",
                                          "The server could not complete the request. Retrying is safe: sends are idempotent on their message id.")
    static func forbidden(_ message: String) -> APIFailure { .init(.forbidden, "forbidden", message) }
    static func tooLarge(_ what: String, limit: Int) -> APIFailure {
        .init(.payloadTooLarge, "too_large", "\(what) is larger than the limit of \(limit) bytes.")
    }
}
