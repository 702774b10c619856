import Foundation
import PropertyBased
import Testing

@testable import ConfidantApp

/// The app parses the `Range` header of every media request, from anyone who reaches it: no
/// header may trap it, and whatever it answers lies within the file.
@Suite("Range headers")
struct RangeHeaderTests {
    @Test("the forms players send, and the ones that are refused")
    func knownForms() {
        let size = 1_000
        #expect(MediaResponse.parse("bytes=0-99", size: size) == 0..<100)
        #expect(MediaResponse.parse("bytes=900-", size: size) == 900..<1_000)
        #expect(MediaResponse.parse("bytes=-100", size: size) == 900..<1_000)
        #expect(MediaResponse.parse("bytes=-5000", size: size) == 0..<1_000)
        #expect(MediaResponse.parse("bytes=10-5000", size: size) == 10..<1_000)
        for refused in [
            "bytes=1000-", "bytes=5-4", "bytes=-0", "bytes=0-1,5-6", "bytes=+1-2", "bytes=1-+2", "items=0-1",
            "bytes=", "bytes=-", "bytes=a-b", "bytes= 1 - 2", "bytes=99999999999999999999-",
        ] {
            #expect(MediaResponse.parse(refused, size: size) == nil, "\(refused)")
        }
        #expect(MediaResponse.parse("bytes=0-0", size: 0) == nil)
    }

    @Test("the largest positions do not overflow: the range ends at the file's end")
    func largestPositions() {
        let size = 1_000
        #expect(MediaResponse.parse("bytes=0-\(Int.max)", size: size) == 0..<size)
        #expect(MediaResponse.parse("bytes=0-9223372036854775807", size: size) == 0..<size)
        #expect(MediaResponse.parse("bytes=-\(Int.max)", size: size) == 0..<size)
        #expect(MediaResponse.parse("bytes=\(Int.max)-", size: size) == nil)
        #expect(MediaResponse.parse("bytes=0-9223372036854775808", size: size) == nil)
        #expect(MediaResponse.parse("bytes=0-\(Int.max)", size: Int.max) == 0..<Int.max)
        #expect(MediaResponse.parse("bytes=\(Int.max - 1)-\(Int.max)", size: Int.max) == (Int.max - 1)..<Int.max)
    }

    @Test("any header over any size: no trap, and the range, when there is one, is non-empty and inside the file")
    func anyHeader() async {
        let numbers = Gen.oneOf(
            Gen.int(in: 0...2_000).map(String.init), Gen.int(in: 0...Int.max).map(String.init),
            Gen.always(String(Int.max)), Gen.always("9223372036854775808"), Gen.always(""), Gen.always("-1"))
        await propertyCheck(count: 2_000, input: numbers, numbers, Gen.int(in: 0...Int.max), Gen.bool) {
            first, second, size, sizeIsSmall in
            let fileSize = sizeIsSmall ? size % 3_000 : size
            let header = "bytes=\(first)-\(second)"
            guard let range = MediaResponse.parse(header, size: fileSize) else { return }
            #expect(
                !range.isEmpty && range.lowerBound >= 0 && range.upperBound <= fileSize, "\(header) over \(fileSize)")
        }
    }
}
