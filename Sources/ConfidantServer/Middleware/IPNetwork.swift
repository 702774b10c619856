import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv4 or IPv6 network in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`, or one address).
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The network's address bytes (4 or 16).
    public let address: [UInt8]
    /// How many leading bits must match.
    public let prefixLength: Int

    /// Parses `ADDRESS` or `ADDRESS/PREFIX`; nil for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let address = Self.bytes(of: String(parts[0])) else { return nil }
        let maximum = address.count * 8
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...maximum).contains(length) else { return nil }
            prefixLength = length
        } else {
            prefixLength = maximum
        }
        self.address = address
    }

    public var description: String {
        "\(Self.text(of: address) ?? "?")/\(prefixLength)"
    }

    /// Whether `text` (an address, as a socket or a header gives it) is in this network.
    public func contains(_ text: String) -> Bool {
        guard let other = Self.bytes(of: text), other.count == address.count else { return false }
        var bits = prefixLength
        for (mine, theirs) in zip(address, other) where bits > 0 {
            let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
            guard mine & mask == theirs & mask else { return false }
            bits -= 8
        }
        return true
    }

    /// The bytes of an IPv4 or IPv6 address (brackets and an IPv6 zone are tolerated).
    static func bytes(of text: String) -> [UInt8]? {
        var text = text.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if let zone = text.firstIndex(of: "%") { text = String(text[..<zone]) }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    private static func text(of bytes: [UInt8]) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let ok = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        return ok ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
    }
}
