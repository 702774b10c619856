import Foundation

/// A process's resident memory as Linux reports it in `/proc/<pid>/status`, with its peak reset
/// on request, so that a test can show what one transfer added.
package struct ProcessMemory: Sendable {
    package let processID: Int32

    package init(_ processID: Int32) { self.processID = processID }

    /// Resets the peak (`VmHWM`) to the resident size now (`5` in `clear_refs`, Linux 4.0 and later).
    package func resetPeak() throws {
        try Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/\(processID)/clear_refs"))
    }

    /// Resident bytes now (`VmRSS`).
    package func resident() throws -> Int64 { try field("VmRSS:") }

    /// The most resident bytes since the start or the last `resetPeak` (`VmHWM`).
    package func peak() throws -> Int64 { try field("VmHWM:") }

    private func field(_ name: String) throws -> Int64 {
        // /proc files report a size of 0: read to the end rather than by length.
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/\(processID)/status"))
        defer { try? handle.close() }
        let text = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name) }),
            let kilobytes = Int64(line.dropFirst(name.count).split(whereSeparator: \.isWhitespace).first ?? "")
        else { throw CocoaError(.fileReadCorruptFile) }
        return kilobytes * 1024
    }
}
