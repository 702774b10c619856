import ConfidantCrypto
import Foundation
import Testing

/// UUID text written and read without the C library must be Foundation's text, byte for byte.
@Suite struct UUIDTextTests {
    @Test("10,000 random UUIDs: the same text as Foundation in both cases, and read back")
    func agreesWithFoundation() {
        for _ in 0..<10_000 {
            let uuid = UUID()
            #expect(uuid.uppercasedString == uuid.uuidString)
            #expect(uuid.canonicalString == uuid.uuidString.lowercased())
            #expect(UUID(hyphenatedHex: uuid.canonicalString) == uuid)
            #expect(UUID(hyphenatedHex: uuid.uppercasedString) == uuid)
            #expect(UUID(hyphenatedHex: uuid.uuidString[...]) == uuid)  // a Substring
            // The stack-written bytes are the text's, and the bytes parse back.
            var written = [UInt8](repeating: 0, count: 40)
            written.withUnsafeMutableBytes { uuid.writeUppercasedUTF8(into: $0) }
            #expect(written.prefix(36).elementsEqual(uuid.uuidString.utf8))
            #expect(written.suffix(4) == [0, 0, 0, 0])
            #expect(Array(uuid.canonicalString.utf8).withUnsafeBufferPointer { UUID(hyphenatedUTF8: $0) } == uuid)
        }
    }

    @Test("edge values: all zeros, all ones, every nibble")
    func edgeValues() {
        let zero = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        #expect(zero.canonicalString == "00000000-0000-0000-0000-000000000000")
        let ones = UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255))
        #expect(ones.uppercasedString == "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")
        let known = "01234567-89ab-cdef-fedc-ba9876543210"
        #expect(UUID(hyphenatedHex: known)?.canonicalString == known)
        #expect(UUID(hyphenatedHex: known.uppercased())?.canonicalString == known)
        #expect(UUID(hyphenatedHex: "01234567-89AB-cdef-FEDC-ba9876543210")?.canonicalString == known)
    }

    @Test(
        "anything but the 8-4-4-4-12 hex form is refused",
        arguments: [
            "", "0", "01234567-89ab-cdef-fedc-ba987654321", "01234567-89ab-cdef-fedc-ba98765432100",
            "0123456789ab-cdef-fedc-ba9876543210-", "01234567_89ab-cdef-fedc-ba9876543210",
            "01234567-89abc-def-fedc-ba9876543210", "g1234567-89ab-cdef-fedc-ba9876543210",
            "01234567-89ab-cdef-fedc-ba987654321G", " 1234567-89ab-cdef-fedc-ba9876543210",
            "01234567-89ab-cdef-fedc-ba987654321 ", "+1234567-89ab-cdef-fedc-ba9876543210",
            "0123456789abcdeffedcba9876543210", "{01234567-89ab-cdef-fedc-ba9876543210}",
            "01234567-89ab-cdef-fedc-ba98765432é", "０1234567-89ab-cdef-fedc-ba9876543210",
        ])
    func refusesOtherForms(_ text: String) {
        #expect(UUID(hyphenatedHex: text) == nil)
    }

    @Test("one character changed anywhere: accepted only when Foundation reads the same value")
    func mutationsAgreeWithFoundation() {
        let base = Array("01234567-89ab-cdef-fedc-ba9876543210".utf8)
        let replacements = Array("0aAfFgG-_ +x".utf8)
        for index in base.indices {
            for replacement in replacements {
                var bytes = base
                bytes[index] = replacement
                let text = String(decoding: bytes, as: UTF8.self)
                if let ours = UUID(hyphenatedHex: text) {
                    #expect(UUID(uuidString: text) == ours, "\(text)")
                }
            }
        }
    }
}
