import Vapor

/// Headers on every answer, errors included: a Content-Security-Policy that allows only this
/// origin's own files (no inline script, no other origin, Trusted Types for DOM sinks), no
/// framing, no MIME sniffing, no referrer at all (the app's own forms then say `Origin: null`,
/// which `LocalAccessGuard` takes only with `Sec-Fetch-Site: same-origin`), and no caching of
/// pages that hold plaintext.
struct SecurityHeaders: AsyncMiddleware {
    static let contentSecurityPolicy = [
        "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' blob:", "media-src 'self'",
        "connect-src 'self'", "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'",
        "require-trusted-types-for 'script'", "trusted-types confidant",
    ].joined(separator: "; ")

    func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        let response: Response
        do {
            response = try await next.respond(to: request)
        } catch {
            response = await AppErrorPage.response(for: error, request: request)
        }
        let headers = [
            ("Content-Security-Policy", Self.contentSecurityPolicy), ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY"),
            ("Cross-Origin-Opener-Policy", "same-origin"), ("Cross-Origin-Resource-Policy", "same-origin"),
        ]
        for (name, value) in headers { response.headers.replaceOrAdd(name: name, value: value) }
        // Pictures set their own short private caching; everything else may hold plaintext.
        if !request.url.path.hasPrefix("/assets/") && !request.url.path.hasPrefix("/avatars/") {
            response.headers.replaceOrAdd(name: .cacheControl, value: "no-store")
        }
        return response
    }
}
