import Foundation
import Synchronization
import Vapor

/// Locks the vault after a while without use (the Lock button's work, done for the user who
/// walked away): every request a person makes counts as use — pages, forms, files — but not the
/// live regions' streams, the notifications' stream or the assets, which a tab left open keeps
/// asking for by itself.
final class VaultIdleLock: Sendable {
    /// How long without use before the vault locks; nil never locks it.
    let limit: Duration?
    private let now: @Sendable () -> Date
    private let lastUse: Mutex<Date>

    init(limit: Duration?, now: @escaping @Sendable () -> Date = { Date() }) {
        self.limit = limit
        self.now = now
        lastUse = Mutex(now())
    }

    /// Whether a request for `path` is a person using the app.
    static func counts(_ path: String) -> Bool {
        !(path.hasPrefix("/live/") || path.hasPrefix("/assets/") || path == "/favicon.ico")
    }

    func used() { lastUse.withLock { $0 = now() } }

    /// Whether the limit has passed since the last use.
    var isIdle: Bool {
        guard let limit else { return false }
        let idle = now().timeIntervalSince(lastUse.withLock { $0 })
        return idle >= Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
    }

    /// How often the app looks: a tenth of the limit, between 1 s and 30 s.
    var checkInterval: Duration {
        guard let limit else { return .seconds(30) }
        return min(max(limit / 10, .seconds(1)), .seconds(30))
    }
}

/// Records each request that counts as use (``VaultIdleLock/counts(_:)``).
struct ActivityRecorder: AsyncMiddleware {
    let idleLock: VaultIdleLock

    func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        if VaultIdleLock.counts(request.url.path) { idleLock.used() }
        return try await next.respond(to: request)
    }
}
