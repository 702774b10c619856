import Crypto
import Foundation

/// The private halves of a device's prekeys: what a responder needs to accept session starts.
///
/// The current signed X25519 prekey and X-Wing prekey are replaced every ``rotationInterval``;
/// replaced ones are kept for ``retentionAfterReplacement`` so that starts already on their way
/// still open. One-time prekeys are erased when a start uses them; those a start never used are
/// forgotten after ``oneTimeRetention``, and at most ``maximumOneTime`` are kept (the oldest go
/// first), so a peer that keeps claiming bundles without using them cannot make the store grow.
public struct DevicePrekeys: Sendable {
    /// How often the signed prekeys are replaced (Signal: about weekly).
    public static let rotationInterval: TimeInterval = 7 * 24 * 3600
    /// How long a replaced signed prekey still accepts starts.
    public static let retentionAfterReplacement: TimeInterval = 30 * 24 * 3600
    /// How many one-time prekeys a device publishes at a time.
    public static let batchSize = 100
    /// The most one-time private keys kept: the relay keeps at most 500 unused ones, and a few
    /// batches more cover starts still on their way.
    public static let maximumOneTime = 1_000
    /// How long an unused one-time prekey is kept after it was made: a start that arrives later
    /// than that (the relay keeps undelivered mail no longer) cannot be waited for.
    public static let oneTimeRetention: TimeInterval = 60 * 24 * 3600

    struct OneTime: Sendable {
        let created: Date
        let key: Curve25519.KeyAgreement.PrivateKey
    }

    struct Signed<Key: Sendable>: Sendable {
        let id: UInt32
        let created: Date
        let key: Key
    }

    private(set) var signed: [Signed<Curve25519.KeyAgreement.PrivateKey>]
    private(set) var kem: [Signed<XWingMLKEM768X25519.PrivateKey>]
    private(set) var oneTime: [UInt32: OneTime]
    private var nextID: UInt32

    /// New prekeys for a new device: one signed, one X-Wing and ``batchSize`` one-time prekeys.
    public static func generate(now: Date = Date()) throws -> DevicePrekeys {
        // A random first id: a device that starts over (a new key) does not reuse the ids of its
        // old prekeys, so a start made for those reads as "no longer held", not as tampering.
        var prekeys = DevicePrekeys(signed: [], kem: [], oneTime: [:], nextID: UInt32.random(in: 1...(UInt32.max / 2)))
        try prekeys.rotate(now: now)
        _ = prekeys.addOneTimePrekeys(batchSize, now: now)
        return prekeys
    }

    /// No prekeys at all: what opens a message that starts no session
    /// (``SessionRecord/needsPrekeys(toOpen:)``); a start opened with it finds no prekey.
    public static var none: DevicePrekeys { DevicePrekeys(signed: [], kem: [], oneTime: [:], nextID: 1) }

    init(
        signed: [Signed<Curve25519.KeyAgreement.PrivateKey>], kem: [Signed<XWingMLKEM768X25519.PrivateKey>],
        oneTime: [UInt32: OneTime], nextID: UInt32
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

    /// Creates `count` one-time prekeys (at most ``maximumOneTime``) and returns their public
    /// halves for upload; then forgets unused ones past ``oneTimeRetention`` and, beyond
    /// ``maximumOneTime``, the oldest.
    public mutating func addOneTimePrekeys(_ count: Int, now: Date = Date()) -> [OneTimePrekey] {
        let fresh = (0..<min(max(0, count), Self.maximumOneTime)).map { _ in
            let id = takeID()
            let key = Curve25519.KeyAgreement.PrivateKey()
            oneTime[id] = OneTime(created: now, key: key)
            return OneTimePrekey(id: id, publicKey: key.publicKey.rawRepresentation)
        }
        pruneOneTime(now: now)
        return fresh
    }

    /// Forgets unused one-time prekeys older than ``oneTimeRetention`` and, beyond
    /// ``maximumOneTime``, the oldest.
    public mutating func pruneOneTime(now: Date = Date()) {
        let cutoff = now.addingTimeInterval(-Self.oneTimeRetention)
        oneTime = oneTime.filter { $0.value.created >= cutoff }
        guard oneTime.count > Self.maximumOneTime else { return }
        let newest = oneTime.sorted { ($0.value.created, $0.key) > ($1.value.created, $1.key) }.prefix(
            Self.maximumOneTime)
        oneTime = Dictionary(uniqueKeysWithValues: newest.map { ($0.key, $0.value) })
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
            OneTimePrekey(id: $0.key, publicKey: $0.value.key.publicKey.rawRepresentation)
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
        guard let key = oneTime[id]?.key else { throw SessionError.unknownPrekey("one-time prekey \(id)") }
        return key
    }

    mutating func eraseOneTimePrekey(_ id: UInt32) { oneTime[id] = nil }

    // MARK: Serialization

    static let formatVersion: UInt8 = 2

    /// Secret bytes: store them only encrypted. Version 2 (docs/PROTOCOL.md §9.5):
    /// `u8 version=2 | u32 next id | u8 n | n × (u32 id | u64 created | 32 X25519) | u8 m | m × (u32 id | u64 created |
    /// 32 X-Wing seed) | u16 k | k × (u32 id | u64 created | 32 X25519)`. Version 1 lacks the one-time keys' times.
    public var serialized: Data {
        // Counts fit their fields by construction (rotation and pruning bound them); the newest
        // are kept should one not, rather than trapping.
        let signed = signed.suffix(Int(UInt8.max))
        let kem = kem.suffix(Int(UInt8.max))
        let oneTime = oneTime.sorted { $0.key < $1.key }.suffix(Int(UInt16.max))
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
        for (id, key) in oneTime {
            out.appendBigEndian(id)
            out.appendBigEndian(UInt64(max(0, key.created.timeIntervalSince1970)))
            out += key.key.rawRepresentation
        }
        return Data(out)
    }

    /// Reads the stored form (``serialized``), version 2 or 1; refuses repeated one-time ids.
    /// - Parameters:
    ///   - bytes: the stored form.
    ///   - now: the creation time given to one-time prekeys of a version 1 store.
    public init(serialized bytes: some DataProtocol, now: Date = Date()) throws(SessionError) {
        var reader = ByteReader(bytes)
        do {
            let version = try reader.readUInt8()
            guard version == 1 || version == Self.formatVersion else {
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
            var oneTime: [UInt32: OneTime] = [:]
            for _ in 0..<Int(try reader.readUInt16()) {
                let id = try reader.readUInt32()
                let created = version == 1 ? now : Date(timeIntervalSince1970: Double(try reader.readUInt64()))
                guard oneTime[id] == nil else { throw SessionError.malformed("one-time prekey \(id) is stored twice") }
                oneTime[id] = OneTime(
                    created: created, key: try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: reader.read(32)))
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
