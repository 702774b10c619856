import ConfidantAuth
import Crypto
import Foundation
import Synchronization

/// The secrets of one launch: the token in the URL the command prints (good once), the session
/// cookie it is exchanged for, and the token every form posts back. All 256-bit, new each launch.
final class LaunchSecrets: Sendable {
    /// The `?token=` of the printed URL.
    let launchToken: String
    /// The HttpOnly cookie's value.
    let sessionToken: String
    /// The hidden `_csrf` field of every form (and the `X-CSRF-Token` header of scripts).
    let formToken: String
    private let launchTokenUsed = Mutex(false)

    init() {
        launchToken = Self.randomToken()
        sessionToken = Self.randomToken()
        formToken = Self.randomToken()
    }

    /// Exchanges the launch token, once: a URL that leaked after it was opened is worth nothing.
    func redeem(_ token: String) -> Bool {
        guard ConstantTime.equal(Array(token.utf8), Array(launchToken.utf8)) else { return false }
        return launchTokenUsed.withLock { used in
            defer { used = true }
            return !used
        }
    }

    /// Whether `cookie` is this launch's session.
    func isSession(_ cookie: String?) -> Bool {
        guard let cookie else { return false }
        return ConstantTime.equal(Array(cookie.utf8), Array(sessionToken.utf8))
    }

    /// Whether `token` is this launch's form token.
    func isFormToken(_ token: String?) -> Bool {
        guard let token else { return false }
        return ConstantTime.equal(Array(token.utf8), Array(formToken.utf8))
    }

    private static func randomToken() -> String {
        let key = SymmetricKey(size: .bits256)
        return key.withUnsafeBytes { Data($0) }.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
