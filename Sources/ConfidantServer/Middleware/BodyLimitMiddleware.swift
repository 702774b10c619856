import NIOCore
import Vapor

/// Caps requests before anything decodes them: the URI at `maximumURIBytes`; blob and backup
/// uploads are streamed and capped by their handler while they are written (and must say they
/// are `application/octet-stream`); a shared send frame is collected as JSON is, but must say it
/// is `application/octet-stream`; avatars have their own, smaller cap; everything else is JSON
/// and is collected up to `maximumJSONBodyBytes`, and a body there must say it is
/// `application/json` (in UTF-8, the only charset RFC 8259 allows) and be UTF-8: a decoder that
/// guesses UTF-16 would read what another part of the system reads otherwise.
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
        var json = true
        if request.method == .POST && path == "/v1/messages/shared" {
            // A shared send frame (docs/PROTOCOL.md §7.2), collected like JSON but not JSON.
            guard request.headers.contentType == .binary else {
                throw APIFailure(
                    .unsupportedMediaType, "Send the frame as Content-Type: application/octet-stream.")
            }
            limit = configuration.maximumJSONBodyBytes
            json = false
        } else if (request.method == .POST && path == "/v1/blobs")
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
            let collected: ByteBuffer?
            do {
                collected = try await Self.collect(
                    request, max: limit, within: .seconds(Int64(configuration.requestBodySeconds)))
            } catch let error as any AbortError where error.status == .payloadTooLarge {
                throw APIFailure.tooLarge("The request body", limit: limit)
            }
            if json, limit == configuration.maximumJSONBodyBytes, let body = collected, body.readableBytes > 0 {
                try Self.checkJSON(body, type: request.headers.first(name: .contentType))
            }
        }
        return try await next.respond(to: request)
    }

    static let tooSlow = APIFailure(.requestTimeout, "The request body came too slowly; send it again.")

    /// The body, up to `limit` bytes, if it all arrives `within` the deadline (else 408).
    static func collect(_ request: Request, max limit: Int, within deadline: TimeAmount) async throws -> ByteBuffer? {
        let answer = request.eventLoop.makePromise(of: ByteBuffer?.self)
        // Both complete on the request's event loop; the later one is ignored.
        let timer = request.eventLoop.scheduleTask(in: deadline) { answer.fail(tooSlow) }
        request.body.collect(max: limit).whenComplete { result in
            timer.cancel()
            answer.completeWith(result)
        }
        return try await answer.futureResult.get()
    }

    /// A JSON body: `Content-Type: application/json`, with no charset or `utf-8`, and UTF-8 bytes
    /// without a NUL (which JSON text never holds raw) or a byte-order mark; else 415.
    static func checkJSON(_ body: ByteBuffer, type: String?) throws(APIFailure) {
        let refusal = APIFailure(
            .unsupportedMediaType, "Send JSON as Content-Type: application/json, in UTF-8.")
        guard let type else { throw refusal }
        let parts = type.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard parts.first == "application/json" else { throw refusal }
        for parameter in parts.dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2, pair[0] == "charset" else { continue }
            guard pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) == "utf-8" else { throw refusal }
        }
        let bytes = body.readableBytesView
        guard !bytes.contains(0), bytes.first != 0xEF, bytes.first != 0xFE, bytes.first != 0xFF,
            String(validating: bytes, as: UTF8.self) != nil
        else { throw refusal }
    }
}
