import Foundation

/// The sessions with one peer device: the current one first, then up to ``archiveLimit`` earlier
/// ones that may still receive messages (both sides started at once, or a message was in flight
/// when a new session began). A session that opens a message becomes current, as in libsignal.
public struct SessionRecord: Sendable {
    /// How many earlier sessions are kept besides the current one.
    public static let archiveLimit = 5

    /// The current session first, then earlier ones, most recent first.
    public private(set) var sessions: [RatchetSession]

    /// No session yet.
    public init() { sessions = [] }

    /// Whether the current session can seal. False when there is none yet: then
    /// ``start(from:to:bundle:entropy:)`` comes first.
    public var canSeal: Bool { sessions.first?.canSeal ?? false }

    /// Whether the current session's next seal uses a message number its stored state reserved
    /// (``RatchetSession/sealsWithinReservation``): then the envelope may leave before the record
    /// the seal leaves is on disk. When false, that record must be on disk first.
    public var sealsWithinReservation: Bool { sessions.first?.sealsWithinReservation ?? false }

    /// What the current session has reserved: its sending ratchet key and the first number
    /// beyond the reservation.
    public var sendingReservation: SendingReservation? { sessions.first.flatMap(Self.reservation) }

    /// What the current session reserves that `stored` (the record this one replaces) did not.
    /// Anything but ``NewReservation/none`` must be on disk before anything sealed with the
    /// record leaves, whoever seals with it (a store shared by several processes also has each
    /// sync what another wrote before it sends). A session of `stored` made current again holds
    /// no new reservation.
    public func newReservation(beyond stored: SessionRecord?) -> NewReservation {
        guard let current = sessions.first, let reservation = Self.reservation(of: current), reservation.end > 0
        else { return .none }
        if let before = stored?.sessions.first(where: { $0.baseKey == current.baseKey }),
            let reserved = Self.reservation(of: before), reserved.ratchetKey == reservation.ratchetKey
        {
            return reservation.end > reserved.end ? .extended : .none
        }
        // A session began, or a DH ratchet step started a sending chain since `stored`.
        return current.sendCount == 0 ? .newChain : .extended
    }

    /// How a record reserves message numbers its stored version did not (``newReservation(beyond:)``).
    public enum NewReservation: Sendable {
        /// Nothing new: every number it may seal with was reserved by the stored record.
        case none
        /// A seal went beyond the stored reservation, or a session began with seals on it: the
        /// envelopes sealed are on their way, so the record goes on disk as it commits.
        case extended
        /// A sending chain that a DH ratchet step (or a session begun by a received message)
        /// started, born with its first reservation, nothing sealed on it yet: on disk before
        /// anything sealed on it leaves, which need not hold up the commit that stores it.
        case newChain
    }

    private static func reservation(of session: RatchetSession) -> SendingReservation? {
        guard session.canSeal else { return nil }
        return SendingReservation(ratchetKey: session.sendingRatchetPublicKey, end: session.sendReserve)
    }

    /// The current session's reservation of message numbers (``sendingReservation``).
    public struct SendingReservation: Hashable, Sendable {
        /// The public key of the sending chain's ratchet key pair.
        public let ratchetKey: Data
        /// The first message number not reserved.
        public let end: UInt32
    }

    /// Moves every session's sending chain on to its reservation
    /// (``RatchetSession/skipToReservation()``), for a record read back after its latest writes
    /// may have been lost: a power cut or a crash of the system since it was stored.
    public mutating func skipToReservations() {
        for index in sessions.indices { sessions[index].skipToReservation() }
    }

    /// Starts a new session as initiator; it becomes current.
    public mutating func start(
        from me: PrivateIdentity, to peer: PublicIdentity, bundle: PrekeyBundle,
        entropy: SessionEntropy = .system
    ) throws(SessionError) {
        promote(try RatchetSession.initiate(from: me, to: peer, bundle: bundle, entropy: entropy))
    }

    /// Seals a message in the current session.
    public mutating func seal(
        _ message: some DataProtocol, from me: PrivateIdentity, senderUserID: UUID,
        to peer: PublicIdentity, recipientUserID: UUID, messageID: UUID = UUID(),
        timestamp: Date = Date()
    ) throws(SessionError) -> RatchetEnvelope {
        guard var session = sessions.first, session.canSeal else { throw SessionError.noSession }
        let envelope = try session.seal(
            message, sender: DeviceAddress(userID: senderUserID, deviceID: me.deviceID),
            recipient: DeviceAddress(userID: recipientUserID, deviceID: peer.deviceID), messageID: messageID,
            timestampMilliseconds: UInt64(max(0, (timestamp.timeIntervalSince1970 * 1000).rounded(.down))))
        sessions[0] = session
        return envelope
    }

    /// Whether opening `envelope` reads the device's prekeys: only a start that no session here
    /// began. Every other message opens without them, so a caller need not load them for it.
    public func needsPrekeys(toOpen envelope: RatchetEnvelope) -> Bool {
        guard let start = envelope.start else { return false }
        return session(begunBy: start) == nil
    }

    /// The session here that `start` began, if any (a start repeats until the peer hears back).
    private func session(begunBy start: SessionStart) -> Int? {
        sessions.firstIndex { $0.baseKey.elementsEqual(start.baseKey) }
    }

    /// Opens a v2 envelope from `peer`, starting a responder session if it carries a new start.
    /// A one-time prekey the start used is erased from `prekeys` once the message opens.
    public mutating func open(
        _ envelope: RatchetEnvelope, as me: PrivateIdentity, recipientUserID: UUID, from peer: PublicIdentity,
        prekeys: inout DevicePrekeys, entropy: SessionEntropy = .system
    ) throws(SessionError) -> Data {
        guard envelope.recipient == DeviceAddress(userID: recipientUserID, deviceID: me.deviceID) else {
            throw SessionError.malformed("the envelope is addressed to \(envelope.recipient), not to this device")
        }
        guard envelope.sender.deviceID == peer.deviceID else {
            throw SessionError.malformed(
                "the envelope comes from device \(envelope.sender.deviceID), not from the identity given")
        }
        if let start = envelope.start {
            if let index = session(begunBy: start) {
                var session = sessions[index]
                let message = try session.open(envelope, entropy: entropy)
                sessions.remove(at: index)
                promote(session)
                return Data(message)
            }
            var session = try RatchetSession.respond(to: start, as: me, from: peer, prekeys: prekeys)
            let message = try session.open(envelope, entropy: entropy)
            if let used = start.oneTimePrekeyID { prekeys.eraseOneTimePrekey(used) }
            promote(session)
            return Data(message)
        }
        var sawDuplicate = false
        for index in sessions.indices {
            var session = sessions[index]
            do {
                let message = try session.open(envelope, entropy: entropy)
                sessions.remove(at: index)
                promote(session)
                return Data(message)
            } catch {
                if error == .duplicate { sawDuplicate = true }
            }
        }
        if sawDuplicate { throw SessionError.duplicate }
        throw sessions.isEmpty ? SessionError.noSession : SessionError.tampered
    }

    private mutating func promote(_ session: RatchetSession) {
        sessions.insert(session, at: 0)
        if sessions.count > Self.archiveLimit + 1 { sessions.removeLast(sessions.count - Self.archiveLimit - 1) }
    }

    // MARK: Serialization

    static let formatVersion: UInt8 = 1

    /// `u8 version=1 | u8 count | count × (u32 length | session)`, current first. Secret: store encrypted.
    public var serialized: Data {
        var out: [UInt8] = [Self.formatVersion, UInt8(sessions.count)]
        for session in sessions {
            let bytes = session.serialized
            out.appendBigEndian(UInt32(bytes.count))
            out += bytes
        }
        return Data(out)
    }

    /// Reads the stored form (``serialized``).
    public init(serialized bytes: some DataProtocol) throws(SessionError) {
        var reader = ByteReader(bytes)
        var sessions: [RatchetSession] = []
        var bodies: [[UInt8]] = []
        do throws(TruncatedBytes) {
            guard try reader.readUInt8() == Self.formatVersion else { throw TruncatedBytes() }
            for _ in 0..<Int(try reader.readUInt8()) { bodies.append(try reader.read(Int(reader.readUInt32()))) }
        } catch {
            throw SessionError.malformed("the session record is truncated or of an unknown format")
        }
        for body in bodies { sessions.append(try RatchetSession(serialized: body)) }
        guard reader.isAtEnd else { throw SessionError.malformed("unexpected bytes after the session record") }
        self.sessions = sessions
    }
}
