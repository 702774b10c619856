import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Paces every request body the relay client streams: before each part after the first, it waits
/// until every event loop of the HTTP client has run what was queued on it before, so the parts
/// already handed over have been written to their connections, which have said whether to pause.
/// AsyncHTTPClient asks a streamed body for parts until that pause arrives from the event loop; a
/// file read faster than a busy loop queued parts without bound (a 200 MiB attachment peaked
/// 74 MiB above a 1-byte one on a loaded machine). A body of one part is not delayed.
struct PacedRequestBodies: ClientMiddleware {
    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        try await next(
            request,
            body.map { HTTPBody(PacedParts(body: $0), length: $0.length, iterationBehavior: $0.iterationBehavior) },
            baseURL)
    }

    private struct PacedParts: AsyncSequence, Sendable {
        typealias Element = ArraySlice<UInt8>
        let body: HTTPBody

        struct AsyncIterator: AsyncIteratorProtocol {
            var parts: HTTPBody.AsyncIterator
            var started = false

            mutating func next() async throws -> ArraySlice<UInt8>? {
                if started { try await RelayClient.partsWritten() }
                started = true
                return try await parts.next()
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(parts: body.makeAsyncIterator()) }
    }
}
