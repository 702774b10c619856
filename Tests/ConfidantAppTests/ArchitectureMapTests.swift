import Foundation
import Testing

/// docs/ARCHITECTURE.md is the map a newcomer reads first: a file it names that is gone, or a
/// module it leaves out, is a stale sentence, and fails here.
@Suite("The architecture map names what exists")
struct ArchitectureMapTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func trackedFiles() throws -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: root.appendingPathComponent("Sources").path)
        var files: [String] = []
        while let path = enumerator?.nextObject() as? String { files.append("Sources/" + path) }
        return files
    }

    @Test("every file the map names is in Sources/, and every module in Sources/ is on the map")
    func namesExist() throws {
        let map = try String(contentsOf: Self.root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        let named = try Regex(#"`([A-Za-z0-9/+._-]+\.(?:swift|leaf|yaml))`"#)
        let files = try Self.trackedFiles()
        var checked = 0
        for match in map.matches(of: named) {
            guard let name = match.output[1].substring.map(String.init) else { continue }
            #expect(
                files.contains { $0 == name || $0.hasSuffix("/" + name) }
                    || FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(name).path),
                "docs/ARCHITECTURE.md names \(name), which is not in Sources/")
            checked += 1
        }
        #expect(checked > 50, "the map names files; the pattern found \(checked)")
        let modules = try FileManager.default.contentsOfDirectory(
            atPath: Self.root.appendingPathComponent("Sources").path)
        for module in modules where !module.hasPrefix(".") {
            #expect(map.contains("`\(module)`"), "docs/ARCHITECTURE.md does not mention the module \(module)")
        }
    }
}
