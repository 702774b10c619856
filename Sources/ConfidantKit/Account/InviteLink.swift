import Foundation

/// An invite link as an operator hands it out, `https://relay.example/join?code=K7QM-2XPA-…`
/// (`confidant admin invite create --link-base`): the server to sign up on and the code, read
/// from one pasted string. The code is checked by the server, not here.
public struct InviteLink: Sendable, Hashable {
    /// The server's address: the link without `/join` and its query.
    public let server: String
    /// The invite code as the link carries it.
    public let code: String

    /// Reads a pasted link; nil for anything that is not an `http(s)://…/join?code=…` link.
    public init?(_ text: String) {
        let text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count <= 2_048, var components = URLComponents(string: text),
            let scheme = components.scheme?.lowercased(), scheme == "https" || scheme == "http",
            components.host?.isEmpty == false, components.path.hasSuffix("/join"),
            let code = components.queryItems?.first(where: { $0.name == "code" })?.value,
            (1...64).contains(code.count), code.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") })
        else { return nil }
        components.path = String(components.path.dropLast("/join".count))
        components.query = nil
        components.fragment = nil
        guard let server = components.string else { return nil }
        self.server = server
        self.code = code
    }
}
