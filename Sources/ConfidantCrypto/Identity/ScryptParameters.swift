import Crypto
import Foundation
import _CryptoExtras

/// scrypt cost parameters (RFC 7914), stored beside whatever they protect.
public struct ScryptParameters: Sendable, Hashable {
    /// log2 of the CPU/memory cost N.
    public let log2N: UInt8
    /// Block size r.
    public let r: UInt32
    /// Parallelism p.
    public let p: UInt32

    /// N = 2^17, r = 8, p = 1: 128 MiB and roughly half a second on a laptop core; the default for key files.
    public static let interactive = ScryptParameters(uncheckedLog2N: 17, r: 8, p: 1)
    /// Cheap parameters for tests only: N = 2^10.
    public static let testing = ScryptParameters(uncheckedLog2N: 10, r: 8, p: 1)

    /// Accepted ranges — what writers produce (at most N = 2^20, r = 8, p = 1) with headroom for
    /// p — so that a hostile key file, vault or backup cannot make opening it cost more than about
    /// 1 GiB of memory (128 · r · N bytes) and a few seconds.
    public static let log2NRange: ClosedRange<UInt8> = 10...20
    /// Accepted block sizes r.
    public static let rRange: ClosedRange<UInt32> = 1...8
    /// Accepted parallelism p.
    public static let pRange: ClosedRange<UInt32> = 1...4

    /// Without the range check: for fixed constants and standard test vectors only.
    init(uncheckedLog2N: UInt8, r: UInt32, p: UInt32) {
        self.log2N = uncheckedLog2N
        self.r = r
        self.p = p
    }

    /// - Throws: ``ScryptParametersError/outOfRange(log2N:r:p:)`` if a parameter is outside the accepted ranges.
    public init(log2N: UInt8, r: UInt32, p: UInt32) throws {
        guard Self.log2NRange.contains(log2N), Self.rRange.contains(r), Self.pRange.contains(p) else {
            throw ScryptParametersError.outOfRange(log2N: log2N, r: r, p: p)
        }
        self.init(uncheckedLog2N: log2N, r: r, p: p)
    }

    /// Memory scrypt needs with these parameters, in bytes (128 · N · r · p).
    public var memoryBytes: Int { 128 * (1 << Int(log2N)) * Int(r) * Int(p) }

    /// Derives a 256-bit key from a passphrase.
    public func deriveKey<Salt: DataProtocol>(passphrase: String, salt: Salt) throws -> SymmetricKey {
        try KDF.Scrypt.deriveKey(
            from: Array(passphrase.utf8), salt: salt, outputByteCount: 32, rounds: 1 << Int(log2N),
            blockSize: Int(r), parallelism: Int(p), maxMemory: memoryBytes + (1 << 20))
    }
}

/// Errors about scrypt parameters.
public enum ScryptParametersError: Error, Equatable, CustomStringConvertible {
    case outOfRange(log2N: UInt8, r: UInt32, p: UInt32)

    public var description: String {
        switch self {
        case .outOfRange(let log2N, let r, let p):
            return "scrypt parameters N=2^\(log2N), r=\(r), p=\(p) are outside the accepted ranges "
                + "(N=2^\(ScryptParameters.log2NRange.lowerBound)…2^\(ScryptParameters.log2NRange.upperBound), "
                + "r=\(ScryptParameters.rRange), p=\(ScryptParameters.pRange))"
        }
    }
}
