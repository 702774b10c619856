import Foundation

/// A server address as a user types it: `http://host:port` or `https://host`, nothing after the host.
public enum ServerAddress {
    /// The server's base URL, without a path.
    /// - Throws: `ConfidantKitError.invalidServerURL` for anything else.
    public static func parse(_ text: String) throws -> URL {
        guard var components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", components.host?.isEmpty == false,
            components.path.isEmpty || components.path == "/", components.query == nil
        else {
            throw ConfidantKitError.invalidServerURL(text)
        }
        components.path = ""
        guard let url = components.url else { throw ConfidantKitError.invalidServerURL(text) }
        return url
    }
}
