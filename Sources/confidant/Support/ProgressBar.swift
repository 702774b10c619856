import Foundation

/// A progress bar on stderr for long work, drawn only on a terminal.
final class ProgressBar: @unchecked Sendable {
    private let total: Int
    private let label: String
    private let enabled: Bool
    private var lastDrawn = Date.distantPast

    init(label: String, total: Int, minimumTotal: Int = 1 << 20) {
        self.label = label
        self.total = max(total, 1)
        self.enabled = Terminal.stderrIsTTY && total >= minimumTotal
    }

    func update(_ done: Int) {
        guard enabled, Date().timeIntervalSince(lastDrawn) > 0.1 || done >= total else { return }
        lastDrawn = Date()
        let fraction = min(1, Double(done) / Double(total))
        let width = 30
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "█", count: filled) + String(repeating: "·", count: width - filled)
        FileHandle.standardError.write(Data("\r\u{1B}[K\(label) \(bar) \(Int(fraction * 100))%".utf8))
    }

    func finish() {
        if enabled { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }
}
