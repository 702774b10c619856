import ConfidantAPI
import ConfidantTestSupport
import Foundation
import Testing

@Suite("Error codes")
struct ErrorCodeDocumentationTests {
    @Test("docs/PROTOCOL.md lists every error code the API has, with its status, and no other")
    func protocolDocumentListsEveryCode() throws {
        let document = Repository.file("docs/PROTOCOL.md")
        let text = try String(contentsOf: document, encoding: .utf8)
        var listed: [String: Int] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2, let status = Int(cells[1]) else { continue }
            listed[cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = status
        }
        let expected = Dictionary(
            uniqueKeysWithValues: APIErrorCode.allCases.filter { $0 != .unrecognized }.map {
                ($0.rawValue, $0.httpStatus)
            })
        #expect(listed == expected)
    }

    @Test("unknown codes from a newer server are unrecognized, not a failure to decode")
    func unknownCodes() {
        #expect(APIErrorCode(code: "device_mismatch") == .deviceMismatch)
        #expect(APIErrorCode(code: "something_new") == .unrecognized)
    }
}
