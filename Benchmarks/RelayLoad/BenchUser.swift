import ArgumentParser
import AsyncHTTPClient
import ConfidantAPI
import ConfidantCrypto
import ConfidantKit
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import Synchronization
import WebSocketKit

/// One signed-in benchmark user.
struct BenchUser: Sendable {
    let id: UUID
    let identity: PrivateIdentity
    let token: String

    /// Signs up and signs in; the relay mails a code to prove the address, which the benchmark
    /// reads from the child relay's development outbox.
    static func make(index: Int, client: (String?) -> Client, outbox: URL) async throws -> BenchUser {
        let email = "bench\(index)-\(UUID().uuidString.prefix(6).lowercased())@example.com"
        let password = "benchmark password \(index)"
        let anonymous = client(nil)
        let user = try await anonymous.signUp(
            body: .json(.init(email: email, password: password, displayName: "Bench \(index)"))
        ).created.body.json
        let identity = try PrivateIdentity.generate()
        let challenge = try await anonymous.createDeviceChallenge().created.body.json
        let start = try await anonymous.startSignIn(
            body: .json(
                .init(
                    email: email, identity: .init(identity.publicIdentity.serialized),
                    proof: try .init(signing: challenge, email: email, identity: identity)))
        ).created.body.json
        guard let transaction = start.transactionId else { throw ValidationError("The sign-in has no transaction.") }
        var progress = try await anonymous.answerSignInStep(
            path: .init(transactionId: transaction), body: .json(.init(method: .password, answer: password))
        ).ok.body.json
        if progress.step?.method == .emailCode {
            progress = try await anonymous.answerSignInStep(
                path: .init(transactionId: transaction),
                body: .json(.init(method: .emailCode, answer: try mailedCode(to: email, in: outbox)))
            ).ok.body.json
        }
        guard let session = progress.session else { throw ValidationError("The sign-in asked for more steps.") }
        guard let id = UUID(uuidString: user.id) else {
            throw ValidationError("The server returned a user id that is not a UUID.")
        }
        return BenchUser(id: id, identity: identity, token: session.token)
    }

    /// The code in the development outbox's message to `email`.
    static func mailedCode(to email: String, in outbox: URL) throws -> String {
        for name in try FileManager.default.contentsOfDirectory(atPath: outbox.path).sorted().reversed() {
            let text = try String(contentsOf: outbox.appendingPathComponent(name), encoding: .utf8)
            guard text.contains("To: \(email)\n"), let range = text.range(of: "sign-in code is ") else { continue }
            return String(text[range.upperBound...].prefix { $0 != "." })
        }
        throw ValidationError("No sign-in code for \(email) in \(outbox.path).")
    }
}
