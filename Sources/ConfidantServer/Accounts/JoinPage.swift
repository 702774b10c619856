import Foundation
import Vapor

/// `GET /join?code=…`: what an invite link opens in a browser — the code, and how to use the
/// link (the app's sign-up and `account register --server` take the whole link). It names no
/// server: behind a proxy this process does not know the address people reach it by. It shows
/// nothing from the request but a code read back from Crockford's alphabet, so it needs no
/// escaping. A plain page: no script, no style, nothing fetched, nothing stored.
enum JoinPage {
    static func response(for request: Request) -> Response {
        let code = request.query[String.self, at: "code"]
        let valid = code.flatMap(InviteCode.init(typed:))
        let body: String
        let status: HTTPResponseStatus
        if let valid {
            status = .ok
            body = """
                <h1>You are invited to this Confidant server</h1>
                <p>Invite code: <code>\(valid.display)</code></p>
                <p>In the Confidant app, choose <em>Create an account</em> and paste this page's whole address \
                (the link you opened) as the server: the app reads the server and the code from it. With the \
                command line: <code>confidant account register --server 'THE LINK' --email … --first-name … \
                --last-name …</code>.</p>
                <p>The code works for as many sign-ups as the operator allowed, until it expires.</p>
                """
        } else {
            status = .badRequest
            body = """
                <h1>This invite link is damaged</h1>
                <p>Its code is missing or is not an invite code. Ask whoever sent it for the link again.</p>
                """
        }
        let page = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><title>Confidant invite</title>\
            <meta name="referrer" content="no-referrer"></head><body>\(body)</body></html>
            """
        return Response(
            status: status,
            headers: [
                "Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": "default-src 'none'",
                "Referrer-Policy": "no-referrer", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
            ], body: .init(string: page))
    }
}
