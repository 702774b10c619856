import Foundation

/// One status line on stderr: rewritten in place on a terminal, every few seconds otherwise.
final class ProgressLine: @unchecked Sendable {
    private var last = Date.distantPast
    private let tty = Terminal.stderrIsTTY

    func update(_ text: String) {
        if tty {
            FileHandle.standardError.write(Data(("\r\u{1B}[K" + text).utf8))
        } else if Date().timeIntervalSince(last) > 5 {
            Terminal.printError(text)
            last = Date()
        }
    }

    func finish() {
        if tty { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }
}
