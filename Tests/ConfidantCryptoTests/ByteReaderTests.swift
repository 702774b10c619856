import Foundation
import Testing

@testable import ConfidantCrypto

/// The big-endian reader every binary format here parses untrusted bytes with.
@Suite struct ByteReaderTests {
    @Test("fixed-width reads are big-endian, each from where the last stopped")
    func bigEndianReads() throws {
        let bytes: [UInt8] =
            [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0xFF, 0xFE, 0x80, 0x00, 0x00, 0x01] + Array(0xF0...0xF7)
        var reader = ByteReader(Data(bytes))
        #expect(try reader.readUInt16() == 0x0102)
        #expect(try reader.readUInt32() == 0x0304_0506)
        #expect(try reader.readUInt8() == 0x07)
        #expect(try reader.readUInt16() == 0xFFFE)
        #expect(try reader.readUInt32() == 0x8000_0001)
        #expect(try reader.readUInt64() == 0xF0F1_F2F3_F4F5_F6F7)
        #expect(reader.isAtEnd)
    }

    @Test("a read past the end throws the reader's error and moves nothing")
    func truncatedReads() throws {
        struct Short: Error, Equatable {}
        for count in 0..<8 {
            var reader = ByteReader(Array(repeating: UInt8(0xAB), count: count), truncated: Short())
            if count < 2 { #expect(throws: Short()) { try reader.readUInt16() } }
            if count < 4 { #expect(throws: Short()) { try reader.readUInt32() } }
            #expect(throws: Short()) { try reader.readUInt64() }
            #expect(reader.offset == 0)
            #expect(reader.remaining == count)
        }
        var reader = ByteReader([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(try reader.readUInt64() == .max)
        #expect(throws: TruncatedBytes.self) { try reader.readUInt8() }
    }
}
