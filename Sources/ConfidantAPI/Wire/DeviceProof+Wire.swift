import ConfidantCrypto
import Foundation
import OpenAPIRuntime

extension Components.Schemas.DeviceProof {
    /// Signs `challenge` with the device's key for signing in as `email` (exactly as the sign-in
    /// request will carry it): the proof `POST /v1/sessions` and `POST /v1/auth/sign-in` ask for.
    public init(signing challenge: Components.Schemas.DeviceChallenge, email: String, identity: PrivateIdentity) throws
    {
        let signature = try DeviceProof.sign(
            .signIn, challenge: challenge.challenge.data, binding: Data(email.utf8), with: identity)
        self.init(challenge: challenge.challenge, signature: .init(signature))
    }
}

extension Components.Schemas.StreamRequest {
    /// The first frame of a stream: the device's signature of the stream's `challenge`.
    public init(
        answering challenge: OpenAPIRuntime.Base64EncodedData, as address: DeviceAddress, identity: PrivateIdentity
    )
        throws
    {
        let signature = try DeviceProof.sign(
            .stream, challenge: challenge.data, binding: DeviceProof.streamBinding(address), with: identity)
        self.init(proof: .init(signature))
    }
}
