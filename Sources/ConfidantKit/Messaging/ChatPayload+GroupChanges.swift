import ConfidantCrypto
import Foundation

/// Payload kind 7's body: a list of signed group changes (docs/PROTOCOL.md §8, §10.2).
extension ChatPayload {
    /// The most bytes one signed group change has (docs/PROTOCOL.md §10.2).
    public static let maximumGroupChangeBytes = 16_307

    /// The changes of `changes` that fit one payload each, in order: a history in as few
    /// payloads as the envelope size allows.
    public static func groupChangeBatches(_ changes: [Data]) -> [[Data]] {
        var batches: [[Data]] = []
        var current: [Data] = []
        var size = 20
        for change in changes {
            if !current.isEmpty, size + 2 + change.count > maximumBytes || current.count == Int(UInt16.max) {
                batches.append(current)
                current = []
                size = 20
            }
            current.append(change)
            size += 2 + change.count
        }
        if !current.isEmpty { batches.append(current) }
        return batches
    }

    static func changeList(_ changes: [Data]) throws -> Data {
        guard (1...Int(UInt16.max)).contains(changes.count),
            changes.allSatisfy({ (1...maximumGroupChangeBytes).contains($0.count) })
        else { throw ChatPayloadError.invalidContent("a list of \(changes.count) group changes out of bounds") }
        var bytes: [UInt8] = []
        bytes.appendBigEndian(UInt16(changes.count))
        for change in changes {
            bytes.appendBigEndian(UInt16(change.count))
            bytes += change
        }
        return Data(bytes)
    }

    static func changes(in body: ArraySlice<UInt8>) throws(ChatPayloadError) -> [Data] {
        var reader = ByteReader(body, truncated: ChatPayloadError.invalidContent("a group change list is cut short"))
        let count = Int(try reader.readUInt16())
        guard count >= 1 else { throw .invalidContent("an empty list of group changes") }
        var changes: [Data] = []
        changes.reserveCapacity(min(count, 4_096))
        for _ in 0..<count {
            let size = Int(try reader.readUInt16())
            guard (1...maximumGroupChangeBytes).contains(size), reader.remaining >= size else {
                throw .invalidContent("a group change of \(size) bytes, or cut short")
            }
            changes.append(try reader.readData(size))
        }
        guard reader.isAtEnd else { throw .invalidContent("bytes after the group changes") }
        return changes
    }
}
