import ConfidantAPI
import Vapor

/// An error the API reports as a `Problem`: a stable code (which fixes the HTTP status) and a
/// message for people.
public struct APIFailure: Error, CustomStringConvertible, Sendable, Equatable {
    public let code: APIErrorCode
    public let message: String
    /// Seconds for `Retry-After` (429 and 503).
    public let retryAfter: Int?
    /// The status when it is not the code's own (an HTTP-level refusal from Vapor).
    private let statusOverride: HTTPResponseStatus?

    public init(_ code: APIErrorCode, _ message: String, retryAfter: Int? = nil) {
        self.init(code, message, retryAfter: retryAfter, status: nil)
    }

    init(_ code: APIErrorCode, _ message: String, retryAfter: Int? = nil, status: HTTPResponseStatus?) {
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
        statusOverride = status
    }

    public var status: HTTPResponseStatus { statusOverride ?? HTTPResponseStatus(statusCode: code.httpStatus) }

    public var description: String { "\(code.rawValue): \(message)" }

    static func malformed(_ message: String) -> APIFailure { .init(.malformedRequest, message) }
    static func notFound(_ what: String) -> APIFailure {
        .init(.notFound, "\(what) does not exist or is not yours to see.")
    }
    static let unauthenticated = APIFailure(
        .unauthenticated, "Sign in first: send `Authorization: Bearer <token>` with a valid, unexpired session token.")
    /// Anything unexpected, told without detail (never a stack trace).
    static let internalError = APIFailure(
        .internal,
        "The server could not complete the request. Retrying is safe: sends are idempotent on their message id.")
    static func forbidden(_ message: String) -> APIFailure { .init(.forbidden, message) }
    static func tooLarge(_ what: String, limit: Int) -> APIFailure {
        .init(.tooLarge, "\(what) is larger than the limit of \(limit) bytes.")
    }
}

extension APIFailure {
    /// What a client is told about `error`: our own failures as they are; an outage of the
    /// database or its disk as a `503` with its code (logged once per cause, see `OutageLog`);
    /// anything else as `internal`, logged with its type and never described to the client.
    static func reported(
        _ error: any Error, outages: OutageLog, logger: Logger, metadata: @autoclosure () -> Logger.Metadata = [:]
    ) -> APIFailure {
        if let failure = error as? APIFailure { return failure }
        if let outage = DatabaseOutage.classify(error) {
            outages.record(outage, logger: logger)
            return outage.failure
        }
        var metadata = metadata()
        metadata["type"] = "\(String(reflecting: type(of: error)))"
        logger.error("unexpected error", metadata: metadata)
        return .internalError
    }
}
