import Vapor

extension Request {
    /// The network address the per-address limits and the sign-in policy count.
    func clientAddress(trustingForwardedFor trust: Bool) -> String {
        if trust,
            let forwarded = headers.forwarded.first?.for
                ?? headers.first(name: "X-Forwarded-For")?
                .split(separator: ",").first.map({ String($0).trimmingCharacters(in: .whitespaces) })
        {
            return forwarded
        }
        return remoteAddress?.ipAddress ?? "unknown"
    }
}
