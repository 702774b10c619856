import Foundation

/// A server address as a user types it: `https://host[:port]`, or `http://` to this machine
/// (loopback), nothing after the host.
public enum ServerAddress {
    /// The server's base URL, without a path.
    /// - Parameters:
    ///   - text: what the user typed.
    ///   - allowInsecureHTTP: accept `http://` to another machine (a test network, or a
    ///     proxy on a private link); off by default.
    /// - Throws: `ConfidantKitError.invalidServerURL` for anything else, `insecureServerURL` for
    ///   plain HTTP to another machine.
    public static func parse(_ text: String, allowInsecureHTTP: Bool = false) throws -> URL {
        guard var components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", components.host?.isEmpty == false,
            components.path.isEmpty || components.path == "/", components.query == nil
        else {
            throw ConfidantKitError.invalidServerURL(text)
        }
        components.path = ""
        guard let url = components.url else { throw ConfidantKitError.invalidServerURL(text) }
        try check(url, allowInsecureHTTP: allowInsecureHTTP)
        return url
    }

    /// Refuses `http://` to a host that is not loopback, unless allowed.
    static func check(_ url: URL, allowInsecureHTTP: Bool) throws {
        guard url.scheme?.lowercased() == "http", !allowInsecureHTTP, !isLoopback(url.host ?? "") else { return }
        throw ConfidantKitError.insecureServerURL(url.absoluteString)
    }

    /// `localhost`, 127.0.0.0/8 and ::1.
    static func isLoopback(_ host: String) -> Bool {
        let host = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
        if host == "localhost" || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}
