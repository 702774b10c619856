import Foundation

/// What a relay reads of an envelope to route it: the sending device, the device it is sealed
/// for and the message id.
///
/// It accepts exactly the bytes ``WireEnvelope/init(serialized:)`` accepts and reads the same
/// fields, in place: both versions' layouts are fixed but for their length-prefixed parts, so
/// checking the lengths is checking the envelope, and its keys and ciphertext are not copied out
/// — a relay stores the envelope's bytes as they came. Bytes that are
/// not an envelope go through ``WireEnvelope`` too, which says what is wrong.
public struct EnvelopeRoute: Sendable, Hashable {
    /// The sending device, from the header.
    public let sender: DeviceAddress
    /// The device the envelope is sealed for, from the header.
    public let recipient: DeviceAddress
    /// The message id, from the header.
    public let messageID: UUID

    /// Reads the routing fields of an envelope of either version.
    /// - Throws: ``EnvelopeError``, as ``WireEnvelope/init(serialized:)`` throws it.
    public init(serialized bytes: Data) throws(EnvelopeError) {
        if let route = bytes.withUnsafeBytes({ Self.route(in: $0) }) {
            self = route
            return
        }
        let envelope = try WireEnvelope(serialized: bytes)
        self.init(sender: envelope.sender, recipient: envelope.recipient, messageID: envelope.messageID)
    }

    private init(sender: DeviceAddress, recipient: DeviceAddress, messageID: UUID) {
        self.sender = sender
        self.recipient = recipient
        self.messageID = messageID
    }

    /// The route of a well-formed envelope of either version; nil for anything else, which the
    /// full parse then takes (and refuses with the reason). Internal for the tests: every
    /// envelope sealed here must be read in place.
    static func route(in raw: UnsafeRawBufferPointer) -> EnvelopeRoute? {
        switch raw.first {
        case RatchetEnvelope.version?: ratchetRoute(in: raw)
        case EnvelopeHeader.version?: sealedRoute(in: raw)
        default: nil
        }
    }

    /// A v2 envelope (``RatchetEnvelope``): `version ‖ flags ‖ addressing` (90 bytes) ‖ [session
    /// start] ‖ ratchet key (32) ‖ previous chain length (4) ‖ message number (4) ‖ ciphertext
    /// length (4) ‖ ciphertext, at least its 16-byte tag, and nothing after it.
    private static func ratchetRoute(in raw: UnsafeRawBufferPointer) -> EnvelopeRoute? {
        guard raw.count >= RatchetEnvelope.addressingCount else { return nil }
        let flags = raw[1]
        guard flags & ~RatchetEnvelope.startFlag == 0 else { return nil }
        let start = flags & RatchetEnvelope.startFlag != 0 ? SessionStart.byteCount : 0
        var reader = InPlaceReader(raw: raw, offset: RatchetEnvelope.addressingCount + start + 40)
        guard let length = reader.skipLengthPrefixed(byteCount: 4), length >= 16, reader.isAtEnd else { return nil }
        return addressed(at: 2, in: raw)
    }

    /// A v1 envelope (``SealedEnvelope``): header (91 bytes: `version ‖ suite ‖ flags ‖
    /// addressing`) ‖ encapsulated key length (2) ‖ key ‖ ciphertext length (4) ‖ ciphertext ‖
    /// [signature (64), if the flags say signed], and nothing after it.
    private static func sealedRoute(in raw: UnsafeRawBufferPointer) -> EnvelopeRoute? {
        guard raw.count >= EnvelopeHeader.byteCount, let suite = EnvelopeSuite(rawValue: raw[1]) else { return nil }
        let flags = raw[2]
        guard flags & ~EnvelopeHeader.signedFlag == 0 else { return nil }
        var reader = InPlaceReader(raw: raw, offset: EnvelopeHeader.byteCount)
        guard let key = reader.skipLengthPrefixed(byteCount: 2), suite != .seedLegacy || key == 0,
            reader.skipLengthPrefixed(byteCount: 4) != nil,
            reader.skip(flags & EnvelopeHeader.signedFlag != 0 ? 64 : 0), reader.isAtEnd
        else { return nil }
        return addressed(at: 3, in: raw)
    }

    /// The addressing both versions share, from `offset`: sender user ‖ sender device ‖
    /// recipient user ‖ recipient device ‖ message id (16 bytes each) ‖ timestamp.
    private static func addressed(at offset: Int, in raw: UnsafeRawBufferPointer) -> EnvelopeRoute {
        func uuid(_ index: Int) -> UUID {
            UUID(uuid: raw.loadUnaligned(fromByteOffset: offset + 16 * index, as: uuid_t.self))
        }
        return EnvelopeRoute(
            sender: DeviceAddress(userID: uuid(0), deviceID: uuid(1)),
            recipient: DeviceAddress(userID: uuid(2), deviceID: uuid(3)), messageID: uuid(4))
    }
}

/// Steps over length-prefixed parts of bytes read in place; every step is bounds-checked.
private struct InPlaceReader {
    let raw: UnsafeRawBufferPointer
    var offset: Int

    var isAtEnd: Bool { offset == raw.count }

    /// Steps over `count` bytes; false, not moving, if fewer are left.
    mutating func skip(_ count: Int) -> Bool {
        guard offset <= raw.count, count <= raw.count - offset else { return false }
        offset += count
        return true
    }

    /// Steps over a big-endian length of `byteCount` bytes (2 or 4) and as many bytes as it
    /// says; the length, or nil if the bytes end first.
    mutating func skipLengthPrefixed(byteCount: Int) -> Int? {
        guard offset <= raw.count, byteCount <= raw.count - offset else { return nil }
        var length = 0
        for index in offset..<offset + byteCount { length = length << 8 | Int(raw[index]) }
        offset += byteCount
        return skip(length) ? length : nil
    }
}
