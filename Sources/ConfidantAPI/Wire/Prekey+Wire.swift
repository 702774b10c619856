import ConfidantCrypto
import Foundation

/// Prekeys as the API carries them (docs/PROTOCOL.md §9), one mapping for the server, the client
/// and the tests.
extension Components.Schemas.SignedPrekey {
    public init(_ key: SignedPrekey) {
        self.init(id: Int64(key.id), key: .init(key.publicKey), signature: .init(key.signature))
    }
}

extension Components.Schemas.PrekeyUpload {
    public init(_ upload: PrekeyUpload) {
        self.init(
            signedPrekey: .init(upload.signedPrekey), kemPrekey: .init(upload.kemPrekey),
            oneTimePrekeys: upload.oneTimePrekeys.map { .init(id: Int64($0.id), key: .init($0.publicKey)) })
    }
}

extension SignedPrekey {
    /// A received prekey of `kind`; nil when its id is not in 1...2^32-1. Call `verify(for:)` before use.
    public init?(_ wire: Components.Schemas.SignedPrekey, kind: Kind) {
        guard let id = UInt32(exactly: wire.id), id > 0 else { return nil }
        self.init(kind: kind, id: id, publicKey: Data(wire.key.data), signature: Data(wire.signature.data))
    }
}

extension PrekeyBundle {
    /// A bundle as the relay handed it out; nil when an id or the device id is malformed.
    /// Call `verify(for:)` before use.
    public init?(_ wire: Components.Schemas.PrekeyBundle) {
        guard let device = UUID(uuidString: wire.deviceId), let signed = SignedPrekey(wire.signedPrekey, kind: .x25519),
            let kem = SignedPrekey(wire.kemPrekey, kind: .xwing)
        else { return nil }
        var oneTime: OneTimePrekey?
        if let key = wire.oneTimePrekey {
            guard let id = UInt32(exactly: key.id), id > 0 else { return nil }
            oneTime = OneTimePrekey(id: id, publicKey: Data(key.key.data))
        }
        self.init(deviceID: device, signedPrekey: signed, kemPrekey: kem, oneTimePrekey: oneTime)
    }
}
