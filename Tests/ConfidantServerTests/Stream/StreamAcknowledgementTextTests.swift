import ConfidantAPI
import Foundation
import Testing

@testable import ConfidantServer

/// The relay's direct reading of acknowledgements never differs from `JSONDecoder`'s: on
/// `JSONEncoder`'s texts it reads them itself, and on any damaged text it either reads what the
/// decoder reads or leaves the text to it.
@Suite("Stream acknowledgement text")
struct StreamAcknowledgementTextTests {
    private static func decoded(_ text: String) -> Components.Schemas.StreamRequest? {
        try? StreamCoding.decoder().decode(Components.Schemas.StreamRequest.self, from: Data(text.utf8))
    }

    @Test("JSONEncoder's acknowledgements are read directly, as the decoder reads them; cuts and changes never differ")
    func matchesDecoder() throws {
        let lists: [[Int64]] = [[], [0], [1], [7, 10, 205], [Int64.max], (1...1_000).map { Int64($0) * 9_973 }]
        let replacements: [UInt8] = Array(#"0 9-.,[]{}"e+x"#.utf8)
        var direct = 0
        for cursors in lists {
            let text = String(
                decoding: try StreamCoding.encoder().encode(Components.Schemas.StreamRequest(cursors: cursors)),
                as: UTF8.self)
            #expect(StreamAcknowledgementText.cursors(text) == cursors, "\(text.prefix(40))")
            guard cursors.count < 100 else { continue }
            let bytes = Array(text.utf8)
            var variants = (0..<bytes.count).map { String(decoding: bytes[..<$0], as: UTF8.self) }
            for index in bytes.indices {
                for replacement in replacements {
                    var damaged = bytes
                    damaged[index] = replacement
                    variants.append(String(decoding: damaged, as: UTF8.self))
                }
                var longer = bytes
                longer.insert(UInt8(ascii: "1"), at: index)
                variants.append(String(decoding: longer, as: UTF8.self))
            }
            for variant in variants {
                guard let read = StreamAcknowledgementText.cursors(variant) else { continue }
                direct += 1
                let request = Self.decoded(variant)
                #expect(request?.cursors == read, "\(variant)")
                #expect(request?.send == nil && request?.proof == nil, "\(variant)")
            }
        }
        #expect(direct > 0)
        // Past Int64, a sign, spaces: left to the decoder.
        for text in [
            #"{"cursors":[9223372036854775808]}"#, #"{"cursors":[-1]}"#, #"{"cursors": [1]}"#, #"{"cursors":[01]}"#,
        ] {
            #expect(StreamAcknowledgementText.cursors(text) == nil, "\(text)")
        }
    }
}
