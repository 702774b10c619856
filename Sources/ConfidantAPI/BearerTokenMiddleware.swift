import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Signs every request of a generated `Client` with `Authorization: Bearer <token>`.
public struct BearerTokenMiddleware: ClientMiddleware {
    public let token: String

    public init(token: String) {
        self.token = token
    }

    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields[.authorization] = "Bearer \(token)"
        return try await next(request, body, baseURL)
    }
}
