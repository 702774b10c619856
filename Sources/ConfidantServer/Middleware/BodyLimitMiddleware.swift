import Vapor

/// Caps requests before anything decodes them: the URI at `maximumURIBytes`; blob and backup
/// uploads are streamed and capped by their handler while they are written (and must say they
/// are `application/octet-stream`); avatars have their own, smaller cap; everything else is JSON
/// and is collected up to `maximumJSONBodyBytes`.
struct BodyLimitMiddleware: AsyncMiddleware {
    let configuration: ServerConfiguration
    /// Longer request URIs (path and query) are refused: no parameter needs more.
    static let maximumURIBytes = 4096

    func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        guard request.url.string.utf8.count <= Self.maximumURIBytes else {
            throw APIFailure.malformed("The request URI is longer than \(Self.maximumURIBytes) bytes.")
        }
        let path = request.url.path
        let limit: Int?
        if (request.method == .POST && path == "/v1/blobs")
            || (request.method == .PUT && path.hasPrefix("/v1/backup/objects/"))
        {
            guard request.headers.contentType == .binary else {
                throw APIFailure(
                    .unsupportedMediaType, "Send the bytes as Content-Type: application/octet-stream.")
            }
            limit = nil
        } else if path == "/v1/account/avatar" {
            limit = configuration.maximumAvatarBytes
        } else if request.method == .GET || request.method == .HEAD {
            limit = 0
        } else {
            limit = configuration.maximumJSONBodyBytes
        }
        if let limit {
            if let declared = request.headers.first(name: .contentLength).flatMap(Int.init), declared > limit {
                throw APIFailure.tooLarge("The request body", limit: limit)
            }
            do {
                _ = try await request.body.collect(max: limit).get()
            } catch let error as any AbortError where error.status == .payloadTooLarge {
                throw APIFailure.tooLarge("The request body", limit: limit)
            }
        }
        return try await next.respond(to: request)
    }
}
