import Crypto
import Foundation

/// The stored form of a session (docs/PROTOCOL.md §9.5).
extension RatchetSession {
    /// Version 2 adds the sending reservation; version 1 (still read) reserved nothing.
    static let formatVersion: UInt8 = 2
    private static let hasRemote: UInt8 = 0x01, hasSending: UInt8 = 0x02, hasReceiving: UInt8 = 0x04,
        hasStart: UInt8 = 0x08

    /// Secret bytes (docs/PROTOCOL.md §9.5); store them only encrypted.
    public var serialized: Data {
        var flags: UInt8 = 0
        if remoteRatchetKey != nil { flags |= Self.hasRemote }
        if sendingChain != nil { flags |= Self.hasSending }
        if receivingChain != nil { flags |= Self.hasReceiving }
        if pendingStart != nil { flags |= Self.hasStart }
        var out: [UInt8] = [Self.formatVersion, flags]
        out += associatedData
        out += baseKey
        out += rootKey.bytes
        out += sendingRatchetKey.rawRepresentation
        out += remoteRatchetKey ?? []
        out += sendingChain?.bytes ?? []
        out += receivingChain?.bytes ?? []
        out.appendBigEndian(sendCount)
        out.appendBigEndian(previousSendCount)
        out.appendBigEndian(receiveCount)
        out.appendBigEndian(sendReserve)
        pendingStart?.write(to: &out)
        out.appendBigEndian(UInt16(skippedOrder.count))
        for key in skippedOrder {
            out += key.ratchetKey
            out.appendBigEndian(key.number)
            out += skipped[key]?.bytes ?? []
        }
        out.append(UInt8(retiredChains.count))
        for key in retiredChains { out += key }
        return Data(out)
    }

    /// Reads the stored form (``serialized``) of one session.
    public init(serialized bytes: some DataProtocol) throws(SessionError) {
        var reader = ByteReader(bytes)
        do {
            let version = try reader.readUInt8()
            guard version == 1 || version == Self.formatVersion else {
                throw SessionError.malformed("unknown session format")
            }
            let flags = try reader.readUInt8()
            guard flags & ~(Self.hasRemote | Self.hasSending | Self.hasReceiving | Self.hasStart) == 0 else {
                throw SessionError.malformed("unknown session flags")
            }
            associatedData = try reader.read(32)
            baseKey = try reader.read(32)
            rootKey = RootKey(try reader.read(32))
            sendingRatchetKey = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: reader.read(32))
            sendingRatchetPublicKey = sendingRatchetKey.publicKey.rawRepresentation
            remoteRatchetKey = flags & Self.hasRemote != 0 ? try reader.read(32) : nil
            sendingChain = flags & Self.hasSending != 0 ? ChainKey(try reader.read(32)) : nil
            receivingChain = flags & Self.hasReceiving != 0 ? ChainKey(try reader.read(32)) : nil
            sendCount = try reader.readUInt32()
            previousSendCount = try reader.readUInt32()
            receiveCount = try reader.readUInt32()
            sendReserve = try version == 1 ? sendCount : reader.readUInt32()
            guard sendReserve >= sendCount else {
                throw SessionError.malformed("the sending reservation is behind the sending chain")
            }
            pendingStart = flags & Self.hasStart != 0 ? try SessionStart(reading: &reader) : nil
            for _ in 0..<Int(try reader.readUInt16()) {
                let key = SkippedKey(ratchetKey: try reader.read(32), number: try reader.readUInt32())
                guard skipped.updateValue(MessageKey(try reader.read(32)), forKey: key) == nil else {
                    throw SessionError.malformed("a skipped message key appears twice")
                }
                skippedOrder.append(key)
            }
            retiredChains = try (0..<Int(reader.readUInt8())).map { _ in try reader.read(32) }
        } catch let error as SessionError {
            throw error
        } catch {
            throw SessionError.malformed("the session is truncated or holds an invalid key")
        }
        guard reader.isAtEnd else {
            throw SessionError.malformed("\(reader.remaining) unexpected bytes after the session")
        }
    }
}
