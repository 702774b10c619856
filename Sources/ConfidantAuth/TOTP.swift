import Crypto

/// RFC 6238 time-based one-time passwords: HMAC-SHA-1, 6 digits, 30-second steps, ±1 step of
/// clock drift accepted, and a code's step is never accepted twice.
public struct TOTP: Sendable {
    public let secret: [UInt8]
    public let digits: Int
    public let period: UInt64

    public init(secret: [UInt8], digits: Int = 6, period: UInt64 = 30) {
        self.secret = secret
        self.digits = digits
        self.period = period
    }

    /// A new random 160-bit secret (RFC 4226 recommends at least 128 bits).
    public static func generateSecret() -> [UInt8] { (0..<20).map { _ in UInt8.random(in: .min ... .max) } }

    /// The time step for a Unix time.
    public func step(at unixTime: UInt64) -> UInt64 { unixTime / period }

    /// The code for a time step (RFC 4226 dynamic truncation).
    public func code(forStep step: UInt64) -> String {
        var counter = step.bigEndian
        let message = withUnsafeBytes(of: &counter) { Array($0) }
        let mac = Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: SymmetricKey(data: secret)))
        let offset = Int(mac[mac.count - 1] & 0x0F)
        let binary =
            (UInt32(mac[offset] & 0x7F) << 24) | (UInt32(mac[offset + 1]) << 16) | (UInt32(mac[offset + 2]) << 8)
            | UInt32(mac[offset + 3])
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let value = String(binary % modulus)
        return String(repeating: "0", count: digits - value.count) + value
    }

    public func code(at unixTime: UInt64) -> String { code(forStep: step(at: unixTime)) }

    /// Checks a code at `unixTime`, allowing one step either side.
    /// - Parameter lastAcceptedStep: the step of the last code accepted for this user; it and earlier steps are refused.
    /// - Returns: the matching step (store it as the new `lastAcceptedStep`), or `nil`.
    public func verify(_ candidate: String, at unixTime: UInt64, lastAcceptedStep: UInt64?) -> UInt64? {
        let now = step(at: unixTime)
        var matched: UInt64?
        // Check every window position, so timing does not tell which one matched.
        for candidateStep in [now &- 1, now, now &+ 1] where candidateStep <= now + 1 {
            if ConstantTime.equal(Array(code(forStep: candidateStep).utf8), Array(candidate.utf8)), matched == nil {
                matched = candidateStep
            }
        }
        guard let matched else { return nil }
        if let lastAcceptedStep, matched <= lastAcceptedStep { return nil }
        return matched
    }

    /// The `otpauth://` URI authenticator apps read (Key Uri Format).
    public func provisioningURI(account: String, issuer: String = "Confidant") -> String {
        func escape(_ s: String) -> String {
            s.utf8.map { byte -> String in
                let c = Character(Unicode.Scalar(byte))
                if c.isASCII, c.isLetter || c.isNumber || "-._~@".contains(c) { return String(c) }
                let hex = Array("0123456789ABCDEF")
                return "%" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 0x0F)])
            }.joined()
        }
        let secretText = Base32.encode(secret).filter { $0 != "=" }
        return
            "otpauth://totp/\(escape(issuer)):\(escape(account))?secret=\(secretText)&issuer=\(escape(issuer))&algorithm=SHA1&digits=\(digits)&period=\(period)"
    }
}

/// RFC 4648 base32, as TOTP secrets are exchanged. Small enough to write out; no package here has it.
public enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")

    public static func encode(_ bytes: [UInt8]) -> String {
        var out = ""
        var buffer = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | Int(byte)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[(buffer >> (bits - 5)) & 31])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[(buffer << (5 - bits)) & 31]) }
        while out.count % 8 != 0 { out.append("=") }
        return out
    }

    /// Decodes, ignoring padding, spaces and case.
    public static func decode(_ text: String) throws(AuthError) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = 0
        var bits = 0
        for character in text.uppercased() where character != "=" && !character.isWhitespace {
            guard let value = alphabet.firstIndex(of: character) else { throw AuthError.invalidSecret }
            buffer = (buffer << 5 | value) & 0xFFFF
            bits += 5
            if bits >= 8 {
                out.append(UInt8((buffer >> (bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return out
    }
}
