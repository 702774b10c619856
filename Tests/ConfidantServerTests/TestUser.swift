import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import OpenAPIRuntime
import Testing

/// A signed-up, signed-in user with a real device identity.
struct TestUser: Sendable {
    let id: UUID
    let email: String
    let password: String
    let identity: PrivateIdentity
    let token: String
    let client: Client

    var address: DeviceAddress { DeviceAddress(userID: id, deviceID: identity.deviceID) }

    /// `TOKEN,SIGNING_KEY_HEX,USER_ID,DEVICE_ID`: what Tests/Interop/stream_abuse.py needs to open
    /// a stream as this device (it signs the stream's challenge itself).
    var streamCredentials: String {
        let key = identity.signingKey.rawRepresentation.map { String(format: "%02x", $0) }.joined()
        return "\(token),\(key),\(id.canonicalString),\(identity.deviceID.canonicalString)"
    }

    /// Signs up and signs in, answering the code the relay mails from `codes` (its development
    /// outbox by default).
    static func make(
        _ relay: some RelayEndpoint, name: String, identity: PrivateIdentity? = nil, codes: RawSignIn.Codes? = nil
    ) async throws -> TestUser {
        let identity = try identity ?? PrivateIdentity.generate()
        let email = "\(name)-\(UUID().uuidString.prefix(8))@example.com"
        let password = "correct horse battery \(name)"
        let anonymous = relay.client()
        let user = try await anonymous.signUp(
            body: .json(.init(email: email, password: password, displayName: name.capitalized))
        ).created.body.json
        return try await signIn(
            relay, id: UUID(uuidString: user.id)!, email: email, password: password, identity: identity, codes: codes)
    }

    static func signIn(
        _ relay: some RelayEndpoint, id: UUID, email: String, password: String, identity: PrivateIdentity,
        codes: RawSignIn.Codes? = nil
    ) async throws -> TestUser {
        // A new account, device or key: the password, then the code the relay mails.
        let session = try await RawSignIn.session(
            relay, email: email, password: password, identity: identity, codes: codes)
        return TestUser(
            id: id, email: email, password: password, identity: identity, token: session.token,
            client: relay.client(token: session.token))
    }

    static func signInWithCode(_ relay: some RelayEndpoint, email: String, password: String, identity: PrivateIdentity)
        async throws -> Components.Schemas.Session
    {
        try await RawSignIn.withCode(relay, email: email, password: password, identity: identity)
    }

    /// Seals `text` for every given device and posts the batch.
    func send(_ text: String, to recipients: [(DeviceAddress, PublicIdentity)], messageID: UUID = UUID()) async throws
        -> Components.Schemas.MessageReceipt
    {
        try await client.sendMessage(body: .json(try batch(text, to: recipients, messageID: messageID))).ok.body.json
    }

    /// `text` sealed for every given device, as a batch to send.
    func batch(_ text: String, to recipients: [(DeviceAddress, PublicIdentity)], messageID: UUID = UUID()) throws
        -> Components.Schemas.MessageBatch
    {
        let envelopes = try recipients.map { address, publicIdentity in
            let envelope = try SealedEnvelope.seal(
                Data(text.utf8), from: identity, senderUserID: id, to: publicIdentity,
                recipientUserID: address.userID, messageID: messageID)
            return Components.Schemas.OutgoingEnvelope(
                recipientUserId: address.userID.uuidString, recipientDeviceId: address.deviceID.uuidString,
                envelope: .init(envelope.serialized))
        }
        return .init(messageId: messageID.uuidString, envelopes: envelopes)
    }

    /// Opens an envelope entry from `sender`.
    func read(_ entry: Components.Schemas.MailboxEntry, from sender: TestUser) throws -> String {
        let envelope = try SealedEnvelope(serialized: try #require(entry.envelope).data)
        return String(
            decoding: try envelope.open(as: identity, recipientUserID: id, from: sender.identity.publicIdentity),
            as: UTF8.self)
    }
}

extension TestDatabaseKind: CustomTestStringConvertible {
    public var testDescription: String { rawValue }
}
