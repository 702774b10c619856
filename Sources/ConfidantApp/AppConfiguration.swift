import ConfidantKit
import Foundation

/// How `confidant app` runs: whose profile it opens and where it listens.
public struct AppConfiguration: Sendable {
    /// The profile the app opens (its device key and local store).
    public var profile: ProfileStorage
    /// The profile's name, as the pages show it.
    public var profileName: String
    /// The profile passphrase when the command was given one (`CONFIDANT_PASSPHRASE`, a file);
    /// otherwise the unlock page asks.
    public var passphrase: String?
    /// The port on 127.0.0.1; 0 picks a free one.
    public var port: Int
    /// What the sign-in form proposes as the server.
    public var defaultServer: String
    /// Accept `http://` to a server on another machine (off by default; loopback is always allowed).
    public var allowInsecureHTTP: Bool
    /// The largest form a page may post (a message, a sign-in form).
    public var maxFormBytes: Int
    /// The largest upload to the vault in one request (all its files).
    public var maxUploadBytes: Int
    /// How long the app may go unused before it locks the vault; nil never locks it by itself.
    public var vaultIdleLock: Duration? = .seconds(15 * 60)

    /// - Parameters:
    ///   - profile: the profile to open.
    ///   - profileName: its name, for the pages.
    ///   - passphrase: the profile passphrase, when known; nil shows the unlock page.
    ///   - port: the port on 127.0.0.1 (0: a free one).
    ///   - defaultServer: the server the sign-in form proposes.
    ///   - allowInsecureHTTP: accept `http://` to another machine.
    public init(
        profile: ProfileStorage, profileName: String, passphrase: String? = nil, port: Int = 0,
        defaultServer: String = "http://127.0.0.1:8080", allowInsecureHTTP: Bool = false
    ) {
        self.profile = profile
        self.profileName = profileName
        self.passphrase = passphrase
        self.port = port
        self.defaultServer = defaultServer
        self.allowInsecureHTTP = allowInsecureHTTP
        maxFormBytes = 256 * 1024
        maxUploadBytes = 64 * 1024 * 1024
    }
}
