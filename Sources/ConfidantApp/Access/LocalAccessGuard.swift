import Foundation
import Synchronization
import Vapor

/// Who may use the app: only the browser that opened the printed link, on this machine.
///
/// - The Host header must name this listener (`127.0.0.1:PORT` or `localhost:PORT`): a page on
///   another site that rebinds its DNS name to 127.0.0.1 is refused (DNS rebinding).
/// - `/?token=…` exchanges the launch token, once, for an HttpOnly, SameSite=Strict cookie and
///   redirects to a URL without it; every other request needs that cookie.
/// - A request that changes something (any method but GET and HEAD) needs the launch's form token
///   (`_csrf` in a form, or `X-CSRF-Token`) and an Origin naming this listener — or `Origin: null`
///   with `Sec-Fetch-Site: same-origin`, which is what a browser sends from the app's own pages
///   under `Referrer-Policy: no-referrer` (scripts cannot set either header).
/// - A request a browser says came from another page (`Sec-Fetch-Site` other than `same-origin`
///   or `none`) is refused, GETs too: SameSite=Strict does not tell ports apart, so a page that
///   any other program serves on 127.0.0.1 is same-site and its requests carry the cookie.
///
/// The local-UI protections of tools such as Jupyter; the cookie is per port, so two apps on one
/// machine do not sign each other out.
struct LocalAccessGuard: AsyncMiddleware {
    let secrets: LaunchSecrets
    let port: BoundPort
    let maxFormBytes: Int
    let maxUploadBytes: Int

    func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        let port = port.value
        guard let host = request.headers.first(name: .host), Self.isLocal(host: host, port: port) else {
            throw Abort(.forbidden, reason: "This app answers only at http://127.0.0.1:\(port)/.")
        }
        if let site = request.headers.first(name: "Sec-Fetch-Site"), site != "same-origin", site != "none" {
            throw Abort(
                .forbidden,
                reason: "This request came from another page, not the app's own; open the app's link instead.")
        }
        let cookieName = Self.cookieName(port: port)
        if request.url.path == "/", let token = request.query[String.self, at: "token"] {
            guard secrets.redeem(token) else {
                throw Abort(
                    .forbidden,
                    reason:
                        "This link was used already or is not this launch's. Restart `confidant app` for a new one.")
            }
            let response = request.redirect(to: "/", redirectType: .normal)
            response.cookies[cookieName] = HTTPCookies.Value(
                string: secrets.sessionToken, path: "/", isSecure: false, isHTTPOnly: true, sameSite: .strict)
            return response
        }
        guard secrets.isSession(request.cookies[cookieName]?.string) else {
            throw Abort(
                .unauthorized,
                reason: "Open the link `confidant app` printed when it started (it signs this browser in).")
        }
        if request.method != .GET && request.method != .HEAD {
            guard let origin = request.headers.first(name: .origin),
                origin == "http://\(host)"
                    || (origin == "null" && request.headers.first(name: "Sec-Fetch-Site") == "same-origin")
            else {
                throw Abort(.forbidden, reason: "This form was not sent from the app's own page.")
            }
            guard try await hasFormToken(request) else {
                throw Abort(.forbidden, reason: "This form is from an earlier launch of the app; reload the page.")
            }
        }
        return try await next.respond(to: request)
    }

    private func hasFormToken(_ request: Request) async throws -> Bool {
        if let header = request.headers.first(name: "X-CSRF-Token") { return secrets.isFormToken(header) }
        let limit: Int
        switch request.headers.contentType {
        case .urlEncodedForm?: limit = maxFormBytes
        case let type? where type.type == "multipart" && type.subType == "form-data":
            // Forms that carry only a profile picture are refused above its size before anything
            // is read (parsing a large multipart body costs seconds of CPU for nothing).
            limit = Self.pictureForms.contains(request.url.path) ? AvatarUpload.maximumRequestBytes : maxUploadBytes
        default: return false
        }
        if let declared = request.headers.first(name: .contentLength).flatMap(Int.init), declared > limit {
            throw Abort(.payloadTooLarge, reason: "That is more than the app takes at once (\(limit / 1024) KiB).")
        }
        _ = try await request.body.collect(max: limit).get()
        return secrets.isFormToken(try? request.content.get(String.self, at: "_csrf"))
    }

    /// The multipart forms whose only file is a profile picture.
    static let pictureForms: Set<String> = ["/welcome", "/profile/avatar"]

    static func isLocal(host: String, port: Int) -> Bool {
        host == "127.0.0.1:\(port)" || host == "localhost:\(port)"
    }

    static func cookieName(port: Int) -> String { "confidant-\(port)" }
}

/// The port the app listens on, known once it is bound (port 0 picks one).
final class BoundPort: Sendable {
    private let port = Mutex(0)
    var value: Int { port.withLock { $0 } }
    func set(_ value: Int) { port.withLock { $0 = value } }
}
