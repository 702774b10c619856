import ConfidantAPI

/// Reads the stream's most frequent client text frame, an acknowledgement `{"cursors":[N,…]}`,
/// in the layout `JSONEncoder` writes it (ConfidantKit's and relay-load's), without
/// `JSONDecoder` and its generic path. Anything else — spaces, another key, a sign, a leading zero, a number
/// past `Int64` — gives nil, and the caller decodes the text with `JSONDecoder` as before; what
/// it returns equals what that decoder returns for the same text (the tests compare them).
enum StreamAcknowledgementText {
    private static let prefix = Array(#"{"cursors":["#.utf8)
    private static let suffix = Array("]}".utf8)

    static func cursors(_ text: String) -> [Int64]? {
        text.utf8.withContiguousStorageIfAvailable { bytes in
            guard bytes.count >= prefix.count + suffix.count, bytes.starts(with: prefix),
                bytes.reversed().starts(with: suffix.reversed())
            else { return nil }
            let end = bytes.count - suffix.count
            var cursors: [Int64] = []
            var index = prefix.count
            if index == end { return cursors }
            while true {
                let start = index
                var value: Int64 = 0
                while index < end, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                    let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
                    let (sum, overflowSum) = times.addingReportingOverflow(Int64(bytes[index] - UInt8(ascii: "0")))
                    guard !overflowTimes, !overflowSum else { return nil }
                    value = sum
                    index += 1
                }
                // One digit at least, and no leading zero (JSON has none).
                guard index > start, bytes[start] != UInt8(ascii: "0") || index == start + 1 else { return nil }
                cursors.append(value)
                if index == end { return cursors }
                guard bytes[index] == UInt8(ascii: ","), index + 1 < end else { return nil }
                index += 1
            }
        } ?? nil
    }
}
