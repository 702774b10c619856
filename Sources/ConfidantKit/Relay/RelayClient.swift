import AsyncHTTPClient
import ConfidantAPI
import Foundation
import NIOCore
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime

/// The generated API client for one server, signed in when a token is given, with transport
/// failures and problem responses turned into ``ConfidantKitError``.
struct RelayClient: Sendable {
    let serverURL: URL
    let api: Client

    /// - Parameter timeout: the whole request's deadline; long for backup transfers.
    init(serverURL: URL, token: String?, timeout: Duration = .seconds(60)) {
        self.serverURL = serverURL
        let deadline = TimeAmount.milliseconds(timeout.components.seconds * 1000)
        api = Client(
            serverURL: serverURL.appendingPathComponent("v1"), configuration: APIConfiguration.default,
            transport: AsyncHTTPClientTransport(configuration: .init(client: Self.http, timeout: deadline)),
            middlewares: [PacedRequestBodies()] + (token.map { [BearerTokenMiddleware(token: $0)] } ?? []))
    }

    /// One HTTP client for the process. A refused connection fails at once: by default the
    /// client's pool keeps retrying until the request's deadline, which would make every command
    /// hang for a minute while the server is down instead of queueing the message.
    static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(60))
        configuration.tlsConfiguration = ServerTrust.tlsConfiguration
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    /// Returns once every event loop of ``http`` has run what was queued on it before: the body
    /// parts handed to the client have been written to their connections, which have said
    /// whether to pause (``PacedRequestBodies`` waits for it between parts).
    static func partsWritten() async throws {
        for loop in http.eventLoopGroup.makeIterator() { try await loop.submit {}.get() }
    }

    /// Runs one API call; a failure that never reached the server becomes `serverUnreachable`.
    func call<T: Sendable>(_ operation: (Client) async throws -> T) async throws -> T {
        do {
            return try await operation(api)
        } catch let error as ConfidantKitError {
            throw error
        } catch let error as ClientError where error.response == nil {
            throw ConfidantKitError.serverUnreachable(
                server: serverURL.absoluteString, reason: Self.describe(error.underlyingError))
        } catch let error as ClientError {
            throw ConfidantKitError.badResponse(
                "HTTP \(error.response?.status.code ?? 0): \(Self.describe(error.underlyingError))")
        }
    }

    /// A transport failure in words a user can act on.
    static func describe(_ error: any Error) -> String {
        let text = String(describing: error)
        if text.contains("connectionRefused") || text.contains("Connection refused") {
            return "connection refused (is the server running?)"
        }
        if text.contains("connectTimeout") || text.contains("deadlineExceeded") { return "timed out" }
        return text
    }
}

/// A problem response turned into a typed error.
func problem(_ status: Int, _ response: Components.Responses.Problem) -> ConfidantKitError {
    guard case .json(let problem) = response.body else {
        return .server(status: status, code: .unrecognized, message: "the server answered \(status)")
    }
    let code = APIErrorCode(code: problem.error)
    if code == .unauthenticated { return .sessionExpired }
    return .server(status: status, code: code, message: problem.message)
}
