import ArgumentParser
import AsyncHTTPClient
import ConfidantAPI
import ConfidantCrypto
import ConfidantKit
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import Synchronization
import WebSocketKit

/// The parts of a `StreamFrame` the generator needs: decoding each envelope (base64 into bytes)
/// would be its largest cost and tell it nothing it does not know.
struct BenchFrame: Decodable {
    struct Entry: Decodable {
        let cursor: Int64
        let messageId: String?
        /// `messageId` as a UUID, when `scan` read it.
        var id: UUID? = nil

        /// The message id, however the frame was read.
        var messageID: UUID? { id ?? messageId.flatMap(UUID.init(uuidString:)) }
    }

    struct Receipt: Decodable {
        let messageId: String
    }

    /// The cursors and message ids of a binary delivery frame (docs/PROTOCOL.md §7.3), without
    /// copying its envelopes; nil if it is not one.
    static func scan(binary buffer: ByteBuffer) -> [Entry]? {
        var buffer = buffer
        guard buffer.readInteger(as: UInt8.self) == StreamDeliveryFrame.version,
            let count = buffer.readInteger(as: UInt16.self)
        else { return nil }
        var entries: [Entry] = []
        entries.reserveCapacity(Int(count))
        for _ in 0..<count {
            guard let cursor = buffer.readInteger(as: Int64.self), buffer.readSlice(length: 8 + 32) != nil,
                let id = buffer.readBytes(length: 16), let length = buffer.readInteger(as: UInt32.self),
                buffer.readSlice(length: Int(length)) != nil
            else { return nil }
            let uuid = UUID(
                uuid: (
                    id[0], id[1], id[2], id[3], id[4], id[5], id[6], id[7], id[8], id[9], id[10], id[11], id[12],
                    id[13], id[14], id[15]
                ))
            entries.append(Entry(cursor: cursor, messageId: nil, id: uuid))
        }
        return buffer.readableBytes == 0 ? entries : nil
    }

    /// How many receipts a binary receipt frame (docs/PROTOCOL.md §7.4) holds; nil if it is not
    /// one. The generator only counts them: each frees a place in the sender's window.
    static func receiptCount(binary buffer: ByteBuffer) -> Int? {
        guard buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) == StreamReceiptFrame.kind,
            let count = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt16.self),
            buffer.readableBytes == 3 + Int(count) * StreamReceiptFrame.Receipt.size
        else { return nil }
        return Int(count)
    }

    var challenge: String?
    var entry: Entry?
    var entries: [Entry]?
    var caughtUp: Bool?
    var receipt: Receipt?
    var refused: Components.Schemas.StreamRefusal?

    /// The two frames that come once per message, entries and receipts, read by their layout
    /// (the relay writes them with `StreamFrameText`) instead of through `JSONDecoder`, which
    /// scanned every envelope's base64 and was a quarter of the generator's CPU (perf). Their
    /// bytes are read directly: Foundation's `range(of:)` and `UUID(uuidString:)` (sscanf) were
    /// another tenth. The generator shares the machine's two cores with the relay; ejabberd's
    /// client reads its stanzas as plainly. Anything else, or a layout that differs: nil, and
    /// `JSONDecoder` reads it.
    static func scan(_ text: String) -> BenchFrame? {
        var text = text
        return text.withUTF8 { bytes -> BenchFrame? in
            if bytes.starts(with: receiptPrefix) {
                let start = receiptPrefix.count
                guard bytes.count >= start + 36 else { return nil }
                return BenchFrame(
                    receipt: Receipt(messageId: String(decoding: bytes[start..<start + 36], as: UTF8.self)))
            }
            if bytes.starts(with: entryPrefix) {
                guard let (entry, _) = scanEntry(bytes, from: entryPrefix.count - cursorKey.count) else { return nil }
                return BenchFrame(entry: entry)
            }
            // `{"entries":[{"cursor":…},…]}`: base64 and UUIDs hold no `{`, so each entry starts at
            // the next `{"cursor":`.
            guard bytes.starts(with: entriesPrefix) else { return nil }
            var entries: [Entry] = []
            var index = entriesPrefix.count - 1
            while index < bytes.count, bytes[index] != UInt8(ascii: "]") {
                guard let (entry, end) = scanEntry(bytes, from: index + 1),
                    let next = find(objectEnd, in: bytes, from: end)
                else { return nil }
                entries.append(entry)
                index = next + objectEnd.count
            }
            return BenchFrame(entries: entries)
        }
    }

    /// The entry whose object starts at `start` (`{"cursor":N,…"messageId":"…"`), and where its
    /// message id ends.
    private static func scanEntry(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> (Entry, Int)? {
        guard bytes.count >= start + cursorKey.count,
            bytes[start..<start + cursorKey.count].elementsEqual(cursorKey)
        else { return nil }
        let digits = start + cursorKey.count
        var index = digits
        var cursor: Int64 = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            cursor = cursor &* 10 &+ Int64(bytes[index] - UInt8(ascii: "0"))
            index += 1
        }
        guard index > digits, let key = find(messageIDKey, in: bytes, from: index) else { return nil }
        let idStart = key + messageIDKey.count
        guard bytes.count >= idStart + 36, let id = uuid(bytes[idStart..<idStart + 36]) else { return nil }
        return (Entry(cursor: cursor, messageId: nil, id: id), idStart + 36)
    }

    private static let entryPrefix = Array(#"{"entry":{"cursor":"#.utf8)
    private static let entriesPrefix = Array(#"{"entries":["#.utf8)
    private static let cursorKey = Array(#"{"cursor":"#.utf8)
    /// An entry object's end: its envelope's closing quote and brace.
    private static let objectEnd = Array(#""}"#.utf8)
    private static let receiptPrefix = Array(#"{"receipt":{"messageId":""#.utf8)
    private static let messageIDKey = Array(#""messageId":""#.utf8)

    private static func find(_ needle: [UInt8], in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        var index = start
        while index <= bytes.count - needle.count {
            if bytes[index] == needle[0], bytes[index..<index + needle.count].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }

    /// A UUID in its 36-character form (8-4-4-4-12 hex digits, either case).
    static func uuid(_ text: Slice<UnsafeBufferPointer<UInt8>>) -> UUID? {
        guard text.count == 36 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 16)
        var nibbles = 0
        for (offset, character) in text.enumerated() {
            if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                guard character == UInt8(ascii: "-") else { return nil }
                continue
            }
            let value: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = character - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = character - UInt8(ascii: "A") + 10
            default: return nil
            }
            bytes[nibbles / 2] |= nibbles % 2 == 0 ? value << 4 : value
            nibbles += 1
        }
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
