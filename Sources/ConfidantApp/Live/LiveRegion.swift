import Foundation
import Vapor

/// A part of a page kept live by Server-Sent Events: each new value of a view model is rendered
/// with the region's template and sent as one `fragment` event, which the page's script puts in
/// place. A comment every 15 s notices a browser that went away (the write fails and the
/// observation ends).
enum LiveRegion {
    static let heartbeat: Duration = .seconds(15)
    /// A chat's region marks arrivals read while it runs: its comment comes every 2 s, so that a
    /// page closed (or a tab hidden, which closes its chat's stream) ends it within that.
    static let chatHeartbeat: Duration = .seconds(2)

    /// - Parameters:
    ///   - template: the fragment template (the same the page includes).
    ///   - heartbeat: how often a comment checks that the browser is still there.
    ///   - values: the page contexts to render, as the view model changes; nil ends the stream.
    static func response<Context: Encodable & Sendable>(
        for request: Request, template: String, heartbeat: Duration = Self.heartbeat,
        values: @escaping @Sendable () async -> AsyncStream<Context>?
    ) -> Response {
        stream(heartbeat: heartbeat, buffering: 4) {
            guard let contexts = await values() else { return nil }
            return AsyncStream { continuation in
                let rendering = Task {
                    for await context in contexts {
                        guard let view = try? await request.view.render(template, context) else { continue }
                        continuation.yield(event(String(buffer: view.data)))
                    }
                    continuation.finish()
                }
                continuation.onTermination = { _ in rendering.cancel() }
            }
        }
    }

    /// A Server-Sent Events response of `events` (each a whole event's text), with a comment every
    /// `heartbeat` between them; at most `buffering` events wait for a slow browser (the newest).
    /// - Parameter events: what to send; nil ends the response at once.
    static func stream(
        heartbeat: Duration = Self.heartbeat, buffering: Int,
        events: @escaping @Sendable () async -> AsyncStream<String>?
    ) -> Response {
        var headers = HTTPHeaders()
        headers.contentType = HTTPMediaType(type: "text", subType: "event-stream", parameters: ["charset": "utf-8"])
        let body = Response.Body(managedAsyncStream: { writer in
            guard let source = await events() else { return }
            let (lines, sink) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(buffering))
            let forwarding = Task {
                for await text in source { sink.yield(text) }
                sink.finish()
            }
            let beating = Task {
                while !Task.isCancelled {
                    do { try await Task.sleep(for: heartbeat) } catch { return }
                    sink.yield(": still here\n\n")
                }
            }
            defer {
                forwarding.cancel()
                beating.cancel()
            }
            sink.yield("retry: 2000\n\n")
            for await text in lines {
                try await writer.write(.buffer(ByteBuffer(string: text)))
            }
        })
        return Response(status: .ok, headers: headers, body: body)
    }

    /// One SSE event: every line of the HTML as a `data:` line.
    static func event(_ html: String) -> String {
        var text = "event: fragment\n"
        for line in html.split(separator: "\n", omittingEmptySubsequences: false) {
            text += "data: \(line.replacingOccurrences(of: "\r", with: ""))\n"
        }
        return text + "\n"
    }
}
