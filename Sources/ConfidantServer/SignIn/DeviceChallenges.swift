import ConfidantAPI
import ConfidantAuth
import ConfidantCrypto
import Fluent
import Foundation

/// The challenges a device signs at sign-in to prove that it holds the key of the identity it
/// presents (docs/PROTOCOL.md §7.1).
///
/// A challenge is `0x01 ‖ expiry (u64 ms since 1970) ‖ 16 random bytes ‖ 16-byte tag`, the tag
/// an HMAC under the server's auth key: nothing is stored when one is handed out (so asking for
/// them costs the server nothing), and any instance sharing the auth key checks it. A challenge
/// that served a sign-in is recorded until it expires, so that it serves no other.
struct DeviceChallenges: Sendable {
    static let lifetime: TimeInterval = 120
    static let version: UInt8 = 1
    static let byteCount = 1 + 8 + 16 + 16

    let secrets: AuthSecrets
    let database: RelayDatabase
    let now: @Sendable () -> Date

    /// A fresh challenge and when it expires.
    func issue() -> (challenge: Data, expiresAt: Date) {
        let expires = now().addingTimeInterval(Self.lifetime)
        let milliseconds = UInt64(max(0, (expires.timeIntervalSince1970 * 1000).rounded()))
        var bytes = Data([Self.version])
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: milliseconds >> shift))
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<16 { bytes.append(generator.next()) }
        bytes += secrets.deviceChallengeTag(bytes)
        return (bytes, Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// Checks that `proof` is the holder of `identity`'s key signing one of our unexpired
    /// challenges for signing in as `email`, and uses the challenge up.
    /// - Throws: `invalid_proof` (401) otherwise.
    func redeem(_ proof: Components.Schemas.DeviceProof, email: String, identity: PublicIdentity) async throws {
        let challenge = Data(proof.challenge.data)
        guard challenge.count == Self.byteCount, challenge.first == Self.version,
            ConstantTime.equal(secrets.deviceChallengeTag(challenge.prefix(25)), challenge.suffix(16))
        else {
            throw APIFailure(.invalidProof, "The device proof's challenge is not one of this server's.")
        }
        let milliseconds = challenge.dropFirst().prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let expires = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        let now = now()
        guard expires > now else {
            throw APIFailure(.invalidProof, "The device proof's challenge expired; ask for a new one.")
        }
        guard
            DeviceProof.isValid(
                Data(proof.signature.data), .signIn, challenge: challenge, binding: Data(email.utf8), for: identity)
        else {
            throw APIFailure(
                .invalidProof,
                "The device proof does not verify: sign the challenge with the key of the identity you present.")
        }
        let nonce = challenge.dropFirst(9).prefix(16).map { String(format: "%02x", $0) }.joined()
        do {
            try await database.write { db in
                try await UsedChallengeRecord(nonce: nonce, expiresAt: expires).create(on: db)
            }
        } catch let error as any DatabaseError where error.isConstraintFailure {
            throw APIFailure(.invalidProof, "This device proof was used already; ask for a new challenge.")
        }
    }
}
