import Crypto
import Foundation
import Vapor

/// What a password must be, and how it is stored: bcrypt (cost ≥ 12) over base64(SHA-256(password)),
/// so that bcrypt's 72-byte limit never silently truncates a long passphrase.
struct PasswordPolicy: Sendable {
    let cost: Int

    static let minimumLength = 10
    static let maximumBytes = 1024

    func check(_ password: String, email: String) throws(APIFailure) {
        guard password.count >= Self.minimumLength else {
            throw APIFailure(.weakPassword, "The password needs at least \(Self.minimumLength) characters.")
        }
        guard password.utf8.count <= Self.maximumBytes else {
            throw APIFailure(.weakPassword, "The password is longer than \(Self.maximumBytes) bytes.")
        }
        guard Set(password).count >= 4 else {
            throw APIFailure(
                .weakPassword, "The password repeats too few different characters; use at least 4 distinct ones.")
        }
        let lowered = password.lowercased()
        let local = email.split(separator: "@").first.map(String.init) ?? email
        guard lowered != email, !(local.count >= 4 && lowered.contains(local)) else {
            throw APIFailure(.weakPassword, "The password must not contain the e-mail address.")
        }
    }

    func hash(_ password: String, on pool: NIOThreadPool) async throws -> String {
        let prehashed = Self.prehash(password)
        let cost = cost
        return try await pool.runIfActive { try Bcrypt.hash(prehashed, cost: cost) }
    }

    func verify(_ password: String, against hash: String, on pool: NIOThreadPool) async throws -> Bool {
        let prehashed = Self.prehash(password)
        return try await pool.runIfActive { try Bcrypt.verify(prehashed, created: hash) }
    }

    /// A valid hash of a random password: verified against when the e-mail is unknown, so that
    /// the answer takes as long as for a real account.
    static let decoyHash: String = (try? Bcrypt.hash(prehash(UUID().uuidString), cost: 12)) ?? ""

    private static func prehash(_ password: String) -> String {
        Data(SHA256.hash(data: Data(password.utf8))).base64EncodedString()
    }
}
