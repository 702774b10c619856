import Crypto
import Foundation
import Testing

/// RFC 9180 test vectors (the CFRG's published JSON, first encryption of each) for exactly the
/// two Auth-mode suites our envelopes use, opened with the same swift-crypto calls as
/// `SealedEnvelope.open`: they pin the suite ids, key encodings and Auth-mode wiring.
@Suite struct HPKEVectorTests {
    static let info = hex("4f6465206f6e2061204772656369616e2055726e")  // "Ode on a Grecian Urn"
    static let aad = hex("436f756e742d30")  // "Count-0"
    /// "Beauty is truth, truth beauty"
    static let plaintext = hex("4265617574792069732074727574682c20747275746820626561757479")

    @Test func authModeP256AES256GCM() throws {
        // mode 2, kem 0x0010, kdf 0x0001, aead 0x0002
        let recipient = try P256.KeyAgreement.PrivateKey(
            rawRepresentation: hex("d9f10996a02cd6c9dbda1d1f225f18f781ea3c893b8c2a6cb2e266e59f3cd9a9"))
        #expect(
            recipient.publicKey.x963Representation
                == Data(
                    hex(
                        "04cd38ef80923e26f157e06c9887f80177c97e1005a41104127271237f946df22eda13d40801bce6184f1a631c44b0807a1a5e8d039975ed0f6079fcbd2dfe6652"
                    )))
        let sender = try P256.KeyAgreement.PublicKey(
            x963Representation: hex(
                "04ece9b48cc98ee03ba742fe1218a3fbec960cc34b6e1defdcd3285276f39028e95b90f9526607565888766a1101f429dc3ec87364b5c8c613f0a081881950427f"
            ))
        var context = try HPKE.Recipient(
            privateKey: recipient, ciphersuite: .P256_SHA256_AES_GCM_256, info: Data(Self.info),
            encapsulatedKey: Data(
                hex(
                    "04a7aeac79fda402674ef247c12d6f5fdfd21498d896b67ff04ec181382d4516b7662be32b4a2ae817c2d57104ecb6fcaa527438939810612d1b3d0af36ffc66ce"
                )),
            authenticatedBy: sender)
        let opened = try context.open(
            hex("59b9890aabf94c1d502c39d8d356989ab0880ed43e984255db7b32a8d7b0ad5beba799a4ec326a0ddca3dd5e5d"),
            authenticating: Self.aad)
        #expect(Array(opened) == Self.plaintext)
    }

    @Test func authModeX25519ChaChaPoly() throws {
        // mode 2, kem 0x0020, kdf 0x0001, aead 0x0003
        let recipient = try Curve25519.KeyAgreement.PrivateKey(
            rawRepresentation: hex("3ca22a6d1cda1bb9480949ec5329d3bf0b080ca4c45879c95eddb55c70b80b82"))
        #expect(
            Array(recipient.publicKey.rawRepresentation)
                == hex("1a478716d63cb2e16786ee93004486dc151e988b34b475043d3e0175bdb01c44"))
        let sender = try Curve25519.KeyAgreement.PublicKey(
            rawRepresentation: hex("f0f4f9e96c54aeed3f323de8534fffd7e0577e4ce269896716bcb95643c8712b"))
        var context = try HPKE.Recipient(
            privateKey: recipient,
            ciphersuite: HPKE.Ciphersuite(kem: .Curve25519_HKDF_SHA256, kdf: .HKDF_SHA256, aead: .chaChaPoly),
            info: Data(Self.info),
            encapsulatedKey: Data(hex("f7674cc8cd7baa5872d1f33dbaffe3314239f6197ddf5ded1746760bfc847e0e")),
            authenticatedBy: sender)
        let opened = try context.open(
            hex("ab1a13c9d4f01a87ec3440dbd756e2677bd2ecf9df0ce7ed73869b98e00c09be111cb9fdf077347aeb88e61bdf"),
            authenticating: Self.aad)
        #expect(Array(opened) == Self.plaintext)
    }
}
