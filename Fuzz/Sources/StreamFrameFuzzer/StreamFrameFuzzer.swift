import ConfidantAPI
import Foundation
import FuzzDriver

@main
struct StreamFrameFuzzer {
    static func main() {
        runLibFuzzer(fuzz)
    }
}

/// The stream's frames come from the other end of a socket (docs/PROTOCOL.md §7.2–7.4): every
/// parser must return or throw a typed error for any bytes, and what parses must serialize back
/// to the same bytes. The first input byte picks the parser.
func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: start, count: count))
    guard let selector = bytes.first else { return 0 }
    let body = Array(bytes.dropFirst())
    switch selector % 4 {
    case 0:
        if let frame = try? StreamSendFrame(serialized: body) {
            precondition(Array(frame.serialized()) == body, "send frame re-serialization differs")
            precondition(Array((try? StreamSendFrame(serialized: Data(body)))?.serialized() ?? Data()) == body)
        }
    case 1:
        if let frame = try? StreamDeliveryFrame(serialized: Data(body)) {
            precondition(Array(frame.serialized()) == body, "delivery frame re-serialization differs")
        }
    case 2:
        if let frame = try? StreamReceiptFrame(serialized: Data(body)) {
            precondition(Array(frame.serialized()) == body, "receipt frame re-serialization differs")
        }
    default:
        // Text frames as a client reads them, one after another on one scanner.
        var scanner = StreamFrameScanner()
        for line in String(decoding: body, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false) {
            _ = scanner.frame(String(line))
        }
    }
    return 0
}
