import Crypto
import Foundation

/// An envelope (format version 1): a cleartext header, an HPKE encapsulated key, the
/// ciphertext of the padded message, and an optional Ed25519 sender signature.
///
/// ```
/// header (91 bytes, the AEAD's associated data)
/// u16 enc length | enc
/// u32 ciphertext length | ciphertext
/// [64-byte signature over "Confidant envelope v1 signature\0" ‖ everything before it]   if header flag 0x01
/// ```
/// See docs/PROTOCOL.md for the full description.
public struct SealedEnvelope: Sendable, Hashable {
    /// HPKE `info` for every v1 envelope.
    public static let hpkeInfo = Data("Confidant envelope v1".utf8)
    static let signatureContext = Array("Confidant envelope v1 signature\u{0}".utf8)
    /// The largest message `seal` accepts (the relay's envelope limit is 64 KiB).
    public static let maximumMessageCount = 1 << 24

    /// The cleartext header, authenticated as associated data.
    public let header: EnvelopeHeader
    /// The HPKE encapsulated key.
    public let encapsulatedKey: Data
    /// The HPKE ciphertext of the padded message, tag included.
    public let ciphertext: Data
    /// The sender's Ed25519 signature over header, key and ciphertext, when the header says it is signed.
    public let signature: Data?

    /// Seals a message from one device to another.
    /// - Parameters:
    ///   - message: the plaintext.
    ///   - sender: the sending device's private identity.
    ///   - senderUserID: the sending user's id.
    ///   - recipient: the receiving device's public identity.
    ///   - recipientUserID: the receiving user's id.
    ///   - suite: the cipher suite; ``EnvelopeSuite/default`` unless named. `.seedLegacy` must be asked for.
    ///   - signed: add an Ed25519 sender signature (always on for suites that require one).
    ///   - messageID: the message id, shared by the copies for each device; random by default.
    ///   - timestamp: the sender's clock; now by default.
    /// - Returns: the sealed envelope.
    /// - Throws: ``EnvelopeError/messageTooLarge(_:)`` or an error from the underlying primitives.
    public static func seal<Message: DataProtocol>(
        _ message: Message,
        from sender: PrivateIdentity, senderUserID: UUID,
        to recipient: PublicIdentity, recipientUserID: UUID,
        suite: EnvelopeSuite = .default, signed: Bool = false,
        messageID: UUID = UUID(), timestamp: Date = Date()
    ) throws -> SealedEnvelope {
        guard message.count <= maximumMessageCount else { throw EnvelopeError.messageTooLarge(message.count) }
        let header = EnvelopeHeader(
            suite: suite, isSigned: signed || suite.requiresSignature,
            sender: DeviceAddress(userID: senderUserID, deviceID: sender.deviceID),
            recipient: DeviceAddress(userID: recipientUserID, deviceID: recipient.deviceID),
            messageID: messageID,
            timestampMilliseconds: UInt64(max(0, (timestamp.timeIntervalSince1970 * 1000).rounded(.down))))
        let aad = header.bytes
        let enc: Data
        let ciphertext: Data
        switch suite {
        case .p256AES256GCM:
            var context = try HPKE.Sender(
                recipientKey: recipient.agreementKey, ciphersuite: .P256_SHA256_AES_GCM_256, info: hpkeInfo,
                authenticatedBy: sender.agreementKey)
            ciphertext = try context.seal(Padme.pad(Array(message)), authenticating: aad)
            enc = context.encapsulatedKey
        case .x25519ChaChaPoly:
            var context = try HPKE.Sender(
                recipientKey: recipient.x25519Key, ciphersuite: suite.hpkeCiphersuite ?? .P256_SHA256_AES_GCM_256,
                info: hpkeInfo, authenticatedBy: sender.x25519Key)
            ciphertext = try context.seal(Padme.pad(Array(message)), authenticating: aad)
            enc = context.encapsulatedKey
        case .xwingAES256GCM:
            var context = try HPKE.Sender(
                recipientKey: recipient.xwingKey, ciphersuite: .XWingMLKEM768X25519_SHA256_AES_GCM_256, info: hpkeInfo)
            ciphertext = try context.seal(Padme.pad(Array(message)), authenticating: aad)
            enc = context.encapsulatedKey
        case .seedLegacy:
            let keyString = try SeedChat.keyString(
                privateKey: sender.agreementKey, peerPublicKey: recipient.agreementKey)
            ciphertext = Data(try SeedChat.crypt(message, keyString: keyString))
            enc = Data()
        }
        var envelope = SealedEnvelope(header: header, encapsulatedKey: enc, ciphertext: ciphertext, signature: nil)
        if header.isSigned {
            let signature = try sender.signingKey.signature(for: signatureContext + envelope.unsignedBytes)
            envelope = SealedEnvelope(
                header: header, encapsulatedKey: enc, ciphertext: ciphertext, signature: signature)
        }
        return envelope
    }

    init(header: EnvelopeHeader, encapsulatedKey: Data, ciphertext: Data, signature: Data?) {
        self.header = header
        self.encapsulatedKey = encapsulatedKey
        self.ciphertext = ciphertext
        self.signature = signature
    }

    /// Parses an envelope without decrypting it (a relay or client reads the header this way).
    /// - Throws: ``EnvelopeError`` — truncated, unknown version or suite, malformed.
    public init<Bytes: DataProtocol>(serialized bytes: Bytes) throws(EnvelopeError) {
        var reader = ByteReader(bytes)
        let header = try EnvelopeHeader(reading: &reader)
        let enc: Data
        let ciphertext: Data
        let signature: Data?
        do throws(TruncatedBytes) {
            enc = try reader.readData(Int(reader.readUInt16()))
            ciphertext = try reader.readData(Int(reader.readUInt32()))
            signature = header.isSigned ? try reader.readData(64) : nil
        } catch {
            throw EnvelopeError.truncated
        }
        guard reader.isAtEnd else {
            throw EnvelopeError.malformed("\(reader.remaining) unexpected bytes after the envelope")
        }
        if header.suite == .seedLegacy, !enc.isEmpty {
            throw EnvelopeError.malformed("a seed-legacy envelope carries no encapsulated key")
        }
        self.init(header: header, encapsulatedKey: enc, ciphertext: ciphertext, signature: signature)
    }

    var unsignedBytes: [UInt8] {
        var out = header.bytes
        out.reserveCapacity(EnvelopeHeader.byteCount + 6 + encapsulatedKey.count + ciphertext.count + 64)
        out.appendBigEndian(UInt16(encapsulatedKey.count))
        out += encapsulatedKey
        out.appendBigEndian(UInt32(ciphertext.count))
        out += ciphertext
        return out
    }

    /// The wire bytes.
    public var serialized: Data {
        var out = unsignedBytes
        if let signature { out += signature }
        return Data(out)
    }

    /// Verifies and decrypts the envelope.
    /// - Parameters:
    ///   - recipient: this device's private identity.
    ///   - recipientUserID: this user's id.
    ///   - sender: the public identity of the device the header names as sender (looked up by the caller).
    /// - Returns: the message.
    /// - Throws: ``EnvelopeError`` saying why: not for this recipient, sender mismatch, bad or
    ///   missing signature, tampered, malformed padding.
    public func open(as recipient: PrivateIdentity, recipientUserID: UUID, from sender: PublicIdentity)
        throws(EnvelopeError) -> Data
    {
        let me = DeviceAddress(userID: recipientUserID, deviceID: recipient.deviceID)
        guard header.recipient == me else {
            throw EnvelopeError.notForThisRecipient(expected: me, actual: header.recipient)
        }
        guard header.sender.deviceID == sender.deviceID else {
            throw EnvelopeError.senderMismatch(header: header.sender, identityDevice: sender.deviceID.canonicalString)
        }
        if header.suite.requiresSignature, signature == nil { throw EnvelopeError.signatureRequired(header.suite) }
        if let signature {
            guard sender.signingKey.isValidSignature(signature, for: Self.signatureContext + unsignedBytes) else {
                throw EnvelopeError.badSignature
            }
        }
        let aad = header.bytes
        let padded: Data
        do {
            switch header.suite {
            case .p256AES256GCM:
                var context = try HPKE.Recipient(
                    privateKey: recipient.agreementKey, ciphersuite: .P256_SHA256_AES_GCM_256, info: Self.hpkeInfo,
                    encapsulatedKey: encapsulatedKey, authenticatedBy: sender.agreementKey)
                padded = try context.open(ciphertext, authenticating: aad)
            case .x25519ChaChaPoly:
                var context = try HPKE.Recipient(
                    privateKey: recipient.x25519Key,
                    ciphersuite: header.suite.hpkeCiphersuite ?? .P256_SHA256_AES_GCM_256, info: Self.hpkeInfo,
                    encapsulatedKey: encapsulatedKey, authenticatedBy: sender.x25519Key)
                padded = try context.open(ciphertext, authenticating: aad)
            case .xwingAES256GCM:
                var context = try HPKE.Recipient(
                    privateKey: recipient.xwingKey, ciphersuite: .XWingMLKEM768X25519_SHA256_AES_GCM_256,
                    info: Self.hpkeInfo, encapsulatedKey: encapsulatedKey)
                padded = try context.open(ciphertext, authenticating: aad)
            case .seedLegacy:
                let keyString = try SeedChat.keyString(
                    privateKey: recipient.agreementKey, peerPublicKey: sender.agreementKey)
                return Data(try SeedChat.crypt(ciphertext, keyString: keyString))
            }
        } catch {
            throw EnvelopeError.tampered
        }
        guard let message = Padme.unpad(padded) else {
            throw EnvelopeError.malformed("bad padding inside an authentic envelope")
        }
        return Data(message)
    }
}
