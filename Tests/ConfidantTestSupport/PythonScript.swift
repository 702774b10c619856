import Foundation

/// Runs one of the Python scripts in `Tests/Interop` (with the test command's virtual
/// environment first on PATH) and returns its standard output, trimmed.
package enum PythonScript {
    package static func run(_ name: String, _ arguments: [String]) async throws -> String {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Interop").appendingPathComponent(name)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        // Read on another thread so a chatty script cannot block on a full pipe.
        let data = await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: output.fileHandleForReading.readDataToEndOfFile()) }.start()
        }
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
