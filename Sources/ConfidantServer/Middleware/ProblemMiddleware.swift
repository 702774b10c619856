import ConfidantAPI
import NIOHTTP1
import OpenAPIRuntime
import Vapor

/// Turns every error into a JSON `Problem` (`{"error": code, "message": text}`), never a stack
/// trace: our own `APIFailure`s keep their status and code; the OpenAPI runtime's decoding errors
/// become `malformed_request`; an outage of the database or its disk is a `503` with its code;
/// anything unexpected is logged and answered with a bare `internal`.
struct ProblemMiddleware: AsyncMiddleware {
    let outages: OutageLog
    let routes: KnownRoutes

    func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        do {
            return try await next.respond(to: request)
        } catch {
            let failure = failure(for: error, request: request)
            let response = Response(status: failure.status)
            try response.content.encode(Body(error: failure.code.rawValue, message: failure.message), as: .json)
            if let retryAfter = failure.retryAfter {
                response.headers.replaceOrAdd(name: .retryAfter, value: String(retryAfter))
            }
            if failure.code == .methodNotAllowed {
                response.headers.replaceOrAdd(
                    name: .allow, value: routes.methods(for: request.url.path).joined(separator: ", "))
            }
            return response
        }
    }

    private struct Body: Content {
        let error: String
        let message: String
    }

    func failure(for error: any Error, request: Request) -> APIFailure {
        switch error {
        case let failure as APIFailure:
            return failure
        case let serverError as ServerError:
            if let failure = serverError.underlyingError as? APIFailure { return failure }
            // The runtime failed before it had the operation's input: the request does not match
            // the document (bad JSON, a string that is not base64, a missing parameter).
            if serverError.operationInput == nil {
                return .malformed(
                    "The request does not match the API (\(serverError.causeDescription)). See /openapi.yaml.")
            }
            return failure(for: serverError.underlyingError, request: request)
        case let abort as any AbortError:
            let code: APIErrorCode =
                switch abort.status {
                case .notFound: .notFound
                case .methodNotAllowed: .methodNotAllowed
                case .payloadTooLarge: .tooLarge
                case .unsupportedMediaType: .unsupportedMediaType
                default: abort.status.code < 500 ? .malformedRequest : .internal
                }
            let message =
                abort.status == .notFound ? "No such endpoint: \(request.method) \(request.url.path)." : abort.reason
            return APIFailure(code, message, status: abort.status)
        case let refusal as AdministrationError:
            switch refusal {
            case .invalidValue: return .malformed(refusal.description)
            case .noSuchAccount: return APIFailure(.unknownUser, refusal.description)
            case .noSuchDevice: return APIFailure(.notFound, refusal.description)
            }
        case is DecodingError:
            return .malformed("The request body is not valid JSON for this endpoint.")
        case let parserError as HTTPParserError:
            // The client's mistake (a bad chunk size, a body past its Content-Length), not ours.
            request.logger.info("refused a request that is not valid HTTP/1.1", metadata: ["cause": "\(parserError)"])
            return .malformed("The request is not valid HTTP/1.1 (\(parserError)).")
        default:
            return .reported(error, outages: outages, logger: request.logger, metadata: ["path": "\(request.url.path)"])
        }
    }
}
