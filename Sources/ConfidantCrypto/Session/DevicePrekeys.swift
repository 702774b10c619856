import Crypto
import Foundation

/// The private halves of a device's prekeys: what a responder needs to accept session starts.
///
/// The current signed X25519 prekey and X-Wing prekey are replaced every ``rotationInterval``;
/// replaced ones are kept for ``retentionAfterReplacement`` so that starts already on their way
/// still open. One-time prekeys are erased when a start uses them.
public struct DevicePrekeys: Sendable {
    /// How often the signed prekeys are replaced (Signal: about weekly).
    public static let rotationInterval: TimeInterval = 7 * 24 * 3600
    /// How long a replaced signed prekey still accepts starts.
    public static let retentionAfterReplacement: TimeInterval = 30 * 24 * 3600
    /// How many one-time prekeys a device publishes at a time.
    public static let batchSize = 100

    struct Signed<Key: Sendable>: Sendable {
        let id: UInt32
        let created: Date
        let key: Key
    }

    private(set) var signed: [Signed<Curve25519.KeyAgreement.PrivateKey>]
    private(set) var kem: [Signed<XWingMLKEM768X25519.PrivateKey>]
    private(set) var oneTime: [UInt32: Curve25519.KeyAgreement.PrivateKey]
    private var nextID: UInt32

    /// New prekeys for a new device: one signed, one X-Wing and ``batchSize`` one-time prekeys.
    public static func generate(now: Date = Date()) throws -> DevicePrekeys {
        // A random first id: a device that starts over (a new key) does not reuse the ids of its
        // old prekeys, so a start made for those reads as "no longer held", not as tampering.
        var prekeys = DevicePrekeys(signed: [], kem: [], oneTime: [:], nextID: UInt32.random(in: 1...(UInt32.max / 2)))
        try prekeys.rotate(now: now)
        _ = prekeys.addOneTimePrekeys(batchSize)
        return prekeys
    }

    init(
        signed: [Signed<Curve25519.KeyAgreement.PrivateKey>], kem: [Signed<XWingMLKEM768X25519.PrivateKey>],
        oneTime: [UInt32: Curve25519.KeyAgreement.PrivateKey], nextID: UInt32
    ) {
        self.signed = signed
        self.kem = kem
        self.oneTime = oneTime
        self.nextID = nextID
    }

    private mutating func takeID() -> UInt32 {
        defer { nextID = nextID == UInt32.max ? 1 : nextID + 1 }
        return nextID
    }

    /// The ids of the current signed X25519 and X-Wing prekeys (what the relay should hand out).
    public var currentIDs: (signed: UInt32, kem: UInt32)? {
        guard let signed = signed.last, let kem = kem.last else { return nil }
        return (signed.id, kem.id)
    }

    /// How many one-time prekeys are still unused on this device.
    public var oneTimeCount: Int { oneTime.count }

    /// True when the current signed prekeys are older than ``rotationInterval``.
    public func needsRotation(now: Date = Date()) -> Bool {
        guard let current = signed.last else { return true }
        return now.timeIntervalSince(current.created) >= Self.rotationInterval
    }

    /// Replaces the signed and X-Wing prekeys, and forgets replaced ones past their retention.
    public mutating func rotate(now: Date = Date()) throws {
        let cutoff = now.addingTimeInterval(-Self.retentionAfterReplacement)
        // A key's replacement time is its successor's creation time.
        func prune<Key>(_ keys: [Signed<Key>]) -> [Signed<Key>] {
            keys.enumerated().filter { index, _ in
                index + 1 >= keys.count || keys[index + 1].created >= cutoff
            }.map(\.element)
        }
        signed = prune(signed) + [Signed(id: takeID(), created: now, key: Curve25519.KeyAgreement.PrivateKey())]
        kem = prune(kem) + [Signed(id: takeID(), created: now, key: try XWingMLKEM768X25519.PrivateKey.generate())]
    }

    /// Creates `count` one-time prekeys and returns their public halves for upload.
    public mutating func addOneTimePrekeys(_ count: Int) -> [OneTimePrekey] {
        (0..<max(0, count)).map { _ in
            let id = takeID()
            let key = Curve25519.KeyAgreement.PrivateKey()
            oneTime[id] = key
            return OneTimePrekey(id: id, publicKey: key.publicKey.rawRepresentation)
        }
    }

    /// The current signed prekeys, signed by `identity`, and the given one-time prekeys.
    public func upload(signedBy identity: PrivateIdentity, oneTimePrekeys: [OneTimePrekey]) throws -> PrekeyUpload {
        guard let current = signed.last, let currentKEM = kem.last else {
            throw SessionError.malformed("no signed prekey")
        }
        return PrekeyUpload(
            signedPrekey: try SignedPrekey.sign(
                kind: .x25519, id: current.id, publicKey: current.key.publicKey.rawRepresentation, by: identity),
            kemPrekey: try SignedPrekey.sign(
                kind: .xwing, id: currentKEM.id, publicKey: currentKEM.key.publicKey.rawRepresentation, by: identity),
            oneTimePrekeys: oneTimePrekeys)
    }

    /// Every unused one-time prekey's public half (to publish them all again, e.g. after a server reset).
    public var allOneTimePrekeys: [OneTimePrekey] {
        oneTime.sorted { $0.key < $1.key }.map {
            OneTimePrekey(id: $0.key, publicKey: $0.value.publicKey.rawRepresentation)
        }
    }

    func signedPrekey(_ id: UInt32) throws(SessionError) -> Curve25519.KeyAgreement.PrivateKey {
        guard let key = signed.first(where: { $0.id == id })?.key else {
            throw SessionError.unknownPrekey("signed prekey \(id)")
        }
        return key
    }

    func kemPrekey(_ id: UInt32) throws(SessionError) -> XWingMLKEM768X25519.PrivateKey {
        guard let key = kem.first(where: { $0.id == id })?.key else {
            throw SessionError.unknownPrekey("X-Wing prekey \(id)")
        }
        return key
    }

    func oneTimePrekey(_ id: UInt32) throws(SessionError) -> Curve25519.KeyAgreement.PrivateKey {
        guard let key = oneTime[id] else { throw SessionError.unknownPrekey("one-time prekey \(id)") }
        return key
    }

    mutating func eraseOneTimePrekey(_ id: UInt32) { oneTime[id] = nil }

    // MARK: Serialization

    static let formatVersion: UInt8 = 1

    /// Secret bytes: store them only encrypted.
    /// `u8 version=1 | u32 next id | u8 n | n × (u32 id | u64 created | 32 X25519) | u8 m | m × (u32 id | u64 created | 32 X-Wing seed) | u16 k | k × (u32 id | 32 X25519)`
    public var serialized: Data {
        var out: [UInt8] = [Self.formatVersion]
        out.appendBigEndian(nextID)
        out.append(UInt8(signed.count))
        for key in signed {
            out.appendBigEndian(key.id)
            out.appendBigEndian(UInt64(max(0, key.created.timeIntervalSince1970)))
            out += key.key.rawRepresentation
        }
        out.append(UInt8(kem.count))
        for key in kem {
            out.appendBigEndian(key.id)
            out.appendBigEndian(UInt64(max(0, key.created.timeIntervalSince1970)))
            out += key.key.seedRepresentation
        }
        out.appendBigEndian(UInt16(oneTime.count))
        for (id, key) in oneTime.sorted(by: { $0.key < $1.key }) {
            out.appendBigEndian(id)
            out += key.rawRepresentation
        }
        return Data(out)
    }

    /// Reads the stored form (``serialized``); refuses unknown flags and repeated keys.
    public init(serialized bytes: some DataProtocol) throws(SessionError) {
        var reader = ByteReader(bytes)
        do {
            guard try reader.readUInt8() == Self.formatVersion else {
                throw SessionError.malformed("unknown prekey store version")
            }
            nextID = try reader.readUInt32()
            signed = try (0..<Int(reader.readUInt8())).map { _ in
                Signed(
                    id: try reader.readUInt32(), created: Date(timeIntervalSince1970: Double(try reader.readUInt64())),
                    key: try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: reader.read(32)))
            }
            kem = try (0..<Int(reader.readUInt8())).map { _ in
                Signed(
                    id: try reader.readUInt32(), created: Date(timeIntervalSince1970: Double(try reader.readUInt64())),
                    key: try XWingMLKEM768X25519.PrivateKey(seedRepresentation: reader.read(32), publicKey: nil))
            }
            var oneTime: [UInt32: Curve25519.KeyAgreement.PrivateKey] = [:]
            for _ in 0..<Int(try reader.readUInt16()) {
                oneTime[try reader.readUInt32()] = try Curve25519.KeyAgreement.PrivateKey(
                    rawRepresentation: reader.read(32))
            }
            self.oneTime = oneTime
        } catch let error as SessionError {
            throw error
        } catch {
            throw SessionError.malformed("the prekey store is truncated or holds an invalid key")
        }
        guard reader.isAtEnd, !signed.isEmpty, !kem.isEmpty else {
            throw SessionError.malformed("the prekey store is incomplete")
        }
    }
}
