import Vapor

extension Request {
    /// The network address the per-address limits and the sign-in policy count: the socket's
    /// peer, unless that is one of `trustedProxies`. Then `X-Forwarded-For` is read from the
    /// right, past every trusted proxy, and the first untrusted address is the client — as
    /// nginx's real-IP module does: the leftmost entries are whatever the client wrote.
    func clientAddress(trustedProxies: [IPNetwork]) -> String {
        let peer = remoteAddress?.ipAddress ?? "unknown"
        guard !trustedProxies.isEmpty, trustedProxies.contains(where: { $0.contains(peer) }) else { return peer }
        let forwarded = headers[.xForwardedFor].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        for candidate in forwarded.reversed() where !trustedProxies.contains(where: { $0.contains(candidate) }) {
            // Something that is not an address at all is not believed either.
            return IPNetwork.bytes(of: candidate) == nil ? peer : candidate
        }
        return forwarded.first ?? peer
    }
}
