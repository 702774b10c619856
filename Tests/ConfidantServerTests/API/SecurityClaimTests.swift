import ConfidantTestSupport
import Foundation
import Testing

/// docs/SECURITY.md's limits: each bullet has rows in its claim → test table, and every test the
/// table names exists (by the start of its title), so a claim without a test shows.
@Suite("SECURITY.md's limits and their tests")
struct SecurityClaimTests {
    @Test("every limit in SECURITY.md names tests, and every test it names exists")
    func everyLimitNamesItsTest() throws {
        let text = try String(contentsOf: Repository.file("docs/SECURITY.md"), encoding: .utf8)
        let section = try #require(Self.section(text, titled: "## Limits against abuse"))
        let bullets = section.split(separator: "\n").filter { $0.hasPrefix("- **") }.compactMap { line in
            line.dropFirst(2).split(separator: "**").first.map(String.init)
        }
        #expect(bullets.count >= 7, "the limits section's bullets: \(bullets)")
        let rows = section.split(separator: "\n").filter { $0.hasPrefix("| **") }
        let titles = try Self.testTitles()
        for bullet in bullets {
            #expect(rows.contains { $0.hasPrefix("| **\(bullet)**") }, "no test named for “\(bullet)”")
        }
        for row in rows {
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let names = try #require(cells.last).split(separator: ";").map {
                $0.trimmingCharacters(in: CharacterSet(charactersIn: " \""))
            }
            #expect(!names.isEmpty && names.allSatisfy { !$0.isEmpty }, "\(row)")
            for name in names {
                #expect(titles.contains { $0.hasPrefix(name) }, "no test's title starts with “\(name)”")
            }
        }
    }

    /// The text from the heading that starts with `title` to the next `## ` heading.
    static func section(_ text: String, titled title: String) -> Substring? {
        guard let start = text.range(of: "\n" + title) else { return nil }
        let rest = text[start.upperBound...]
        let end = rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex
        return rest[..<end]
    }

    /// The titles of every `@Test` and `@Suite` in Tests/.
    static func testTitles() throws -> [String] {
        let root = Repository.file("Tests")
        let pattern = try Regex(#"@(Test|Suite)\(\s*"([^"]*)""#)
        var titles: [String] = []
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift", let source = try? String(contentsOf: file, encoding: .utf8) else {
                continue
            }
            for match in source.matches(of: pattern) {
                if let title = match.output[2].substring { titles.append(String(title)) }
            }
        }
        return titles
    }
}
