import ConfidantAPI
import ConfidantCrypto
import Foundation
import OpenAPIRuntime

extension Components.Schemas.SignInRequest {
    /// A password sign-in for `identity`'s device, with a proof signed over a fresh challenge
    /// from `client`'s relay.
    package static func proving(email: String, password: String, identity: PrivateIdentity, on client: Client)
        async throws -> Self
    {
        .init(
            email: email, password: password, identity: .init(identity.publicIdentity.serialized),
            proof: try await .fresh(email: email, identity: identity, on: client))
    }
}

extension Components.Schemas.SignInStart {
    /// The start of a sign-in transaction for `identity`'s device, with a fresh proof.
    package static func proving(email: String, identity: PrivateIdentity, on client: Client) async throws -> Self {
        .init(
            email: email, identity: .init(identity.publicIdentity.serialized),
            proof: try await .fresh(email: email, identity: identity, on: client))
    }
}

extension Components.Schemas.DeviceProof {
    /// A challenge from `client`'s relay, signed by `identity` for signing in as `email`.
    package static func fresh(email: String, identity: PrivateIdentity, on client: Client) async throws -> Self {
        try .init(
            signing: try await client.createDeviceChallenge().created.body.json, email: email, identity: identity)
    }
}

/// Signing in through the raw API as a client does it: `POST /v1/sessions`, and when the relay
/// asks for more, the transaction — the password, then the code it mails (read from its
/// development outbox).
package enum RawSignIn {
    package struct Failed: Error, CustomStringConvertible {
        package let description: String
    }

    /// Where a test reads the code a relay mails to an address.
    package typealias Codes = @Sendable (_ email: String) async throws -> String

    /// The relay's development outbox.
    package static func outbox(_ relay: some RelayEndpoint) -> Codes {
        let directory = relay.dataDirectory
        return { email in try SignInOutbox.latestCode(dataDirectory: directory, for: email) }
    }

    package static func session(
        _ relay: some RelayEndpoint, email: String, password: String, identity: PrivateIdentity,
        codes: Codes? = nil
    ) async throws -> Components.Schemas.Session {
        let client = relay.client()
        if case .created(let created) = try await client.signIn(
            body: .json(try await .proving(email: email, password: password, identity: identity, on: client)))
        {
            return try created.body.json
        }
        return try await withCode(relay, email: email, password: password, identity: identity, codes: codes)
    }

    /// The transaction: the password, then the mailed code when it is asked for.
    package static func withCode(
        _ relay: some RelayEndpoint, email: String, password: String, identity: PrivateIdentity,
        codes: Codes? = nil
    ) async throws -> Components.Schemas.Session {
        let client = relay.client()
        let start = try await client.startSignIn(
            body: .json(try await .proving(email: email, identity: identity, on: client))
        ).created.body.json
        guard let id = start.transactionId else { throw Failed(description: "the sign-in has no transaction id") }
        var progress = try await client.answerSignInStep(
            path: .init(transactionId: id), body: .json(.init(method: .password, answer: password))
        ).ok.body.json
        if progress.step?.method == .emailCode {
            progress = try await client.answerSignInStep(
                path: .init(transactionId: id),
                body: .json(.init(method: .emailCode, answer: try await (codes ?? outbox(relay))(email)))
            ).ok.body.json
        }
        guard let session = progress.session else {
            throw Failed(description: "the sign-in asks for more: \(progress.step?.prompt ?? "nothing")")
        }
        return session
    }
}
