import ConfidantVault
import Foundation
import Vapor

/// Serves a vault file through a `MediaReader`: HTTP range requests (one range; what video
/// elements send) answered with 206 and only the segments the range touches decrypted, the rest
/// streamed in 1 MiB pieces, so memory stays flat whatever the file's size.
enum MediaResponse {
    static let chunk = 1 << 20

    static func response(for request: Request, reader: MediaReader, contentType: String, name: String) throws
        -> Response
    {
        var headers = HTTPHeaders()
        headers.replaceOrAdd(name: .contentType, value: contentType)
        headers.replaceOrAdd(name: .acceptRanges, value: "bytes")
        // Shown inline only for types a browser draws without running anything; others download.
        let inline =
            contentType.hasPrefix("image/") && contentType != "image/svg+xml" || contentType.hasPrefix("video/")
        headers.replaceOrAdd(
            name: .contentDisposition,
            value:
                "\(inline ? "inline" : "attachment"); filename*=UTF-8''\(name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "file")"
        )
        var range = 0..<reader.size
        var status = HTTPStatus.ok
        if let header = request.headers.first(name: .range) {
            guard let asked = parse(header, size: reader.size) else {
                headers.replaceOrAdd(name: .contentRange, value: "bytes */\(reader.size)")
                return Response(status: .rangeNotSatisfiable, headers: headers)
            }
            range = asked
            status = .partialContent
            headers.replaceOrAdd(
                name: .contentRange, value: "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(reader.size)")
        }
        if request.method == .HEAD {
            headers.replaceOrAdd(name: .contentLength, value: String(range.count))
            return Response(status: status, headers: headers)
        }
        let threadPool = request.application.threadPool
        let selected = range
        let body = Response.Body(
            managedAsyncStream: { writer in
                var position = selected.lowerBound
                while position < selected.upperBound {
                    let piece = position..<min(selected.upperBound, position + chunk)
                    // File reads and AES block a thread: not an event loop's.
                    let data = try await threadPool.runIfActive { try reader.read(piece) }
                    try await writer.write(.buffer(ByteBuffer(data: data)))
                    position = piece.upperBound
                }
            }, count: range.count)
        return Response(status: status, headers: headers, body: body)
    }

    /// `bytes=a-b`, `bytes=a-` or `bytes=-n`, one range within the file; nil when unsatisfiable
    /// or not understood (several ranges are not served). Positions are digits only, and any
    /// number, however large, is compared without arithmetic that could overflow.
    static func parse(_ header: String, size: Int) -> Range<Int>? {
        guard header.hasPrefix("bytes="), size > 0 else { return nil }
        let spec = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        if parts[0].isEmpty {
            guard let suffix = position(parts[1]), suffix > 0 else { return nil }
            return (suffix >= size ? 0 : size - suffix)..<size
        }
        guard let start = position(parts[0]), start < size else { return nil }
        if parts[1].isEmpty { return start..<size }
        guard let end = position(parts[1]), end >= start else { return nil }
        return start..<(end >= size - 1 ? size : end + 1)
    }

    /// A byte position: 1 to 19 ASCII digits that fit in `Int`; nil for anything else.
    private static func position(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        return Int(text)
    }
}
