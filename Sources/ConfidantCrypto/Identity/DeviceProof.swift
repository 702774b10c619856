import Crypto
import Foundation

/// Proof that a device holds the private key of the identity it presents: an Ed25519 signature
/// by the identity's signing key over a challenge the server chose, for one purpose.
///
/// Without it, anyone could sign in presenting someone else's public identity (the directory
/// publishes them) and be taken for that known device. Signed bytes (docs/PROTOCOL.md §7.1):
/// ```
/// "Confidant device proof v1" 0x00 ‖ purpose (ASCII) 0x00 ‖ u16 challenge length ‖ challenge ‖ binding
/// ```
public enum DeviceProof {
    /// What a proof is for, so that a signature made for one cannot serve another.
    public enum Purpose: String, Sendable, CaseIterable {
        /// Signing in (`POST /v1/sessions`, `POST /v1/auth/sign-in`); the binding is the e-mail
        /// address exactly as the request carries it.
        case signIn = "sign-in"
        /// Opening `/v1/stream`; the binding is the user id then the device id (16 bytes each).
        case stream
    }

    static let context = Array("Confidant device proof v1\u{0}".utf8)
    /// The longest challenge a proof covers.
    public static let maximumChallengeBytes = 256

    /// The bytes a proof signs.
    /// - Throws: ``KeyFormatError/wrongLength(expected:actual:)`` for an empty or over-long challenge.
    public static func signedBytes(
        _ purpose: Purpose, challenge: some DataProtocol, binding: some DataProtocol
    ) throws -> [UInt8] {
        guard (1...maximumChallengeBytes).contains(challenge.count) else {
            throw KeyFormatError.wrongLength(expected: maximumChallengeBytes, actual: challenge.count)
        }
        var bytes = context
        bytes += Array(purpose.rawValue.utf8)
        bytes.append(0)
        bytes.append(UInt8(challenge.count >> 8))
        bytes.append(UInt8(challenge.count & 0xFF))
        bytes += challenge
        bytes += binding
        return bytes
    }

    /// Signs `challenge` for `purpose` with the device's signing key.
    /// - Returns: the 64-byte Ed25519 signature.
    public static func sign(
        _ purpose: Purpose, challenge: some DataProtocol, binding: some DataProtocol, with identity: PrivateIdentity
    ) throws -> Data {
        try identity.signingKey.signature(for: signedBytes(purpose, challenge: challenge, binding: binding))
    }

    /// Whether `signature` proves that the holder of `identity`'s signing key signed `challenge`
    /// for `purpose` and `binding`.
    public static func isValid(
        _ signature: some DataProtocol, _ purpose: Purpose, challenge: some DataProtocol, binding: some DataProtocol,
        for identity: PublicIdentity
    ) -> Bool {
        guard signature.count == 64,
            let bytes = try? signedBytes(purpose, challenge: challenge, binding: binding)
        else { return false }
        return identity.signingKey.isValidSignature(Data(signature), for: bytes)
    }

    /// The binding of a stream proof: the user id, then the device id.
    public static func streamBinding(_ address: DeviceAddress) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.append(address.userID)
        bytes.append(address.deviceID)
        return bytes
    }
}
