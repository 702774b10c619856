import Foundation

/// Runs one of the Python scripts in `Tests/Interop` (with the test command's virtual
/// environment first on PATH) and returns its standard output, trimmed.
package enum PythonScript {
    package static func run(_ name: String, _ arguments: [String]) async throws -> String {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Interop").appendingPathComponent(name)
        let output = try await ChildProcess.run(
            command: "python3", [script.path] + arguments, mergingStandardError: true)
        return output.text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// The repository's checkout, for tests that read its documents and scripts.
package enum Repository {
    package static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// A file by its path from the repository's root.
    package static func file(_ path: String) -> URL { root.appendingPathComponent(path) }
}
