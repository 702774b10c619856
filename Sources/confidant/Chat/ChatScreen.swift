import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The interactive chat's terminal: a one-line editor at the bottom and messages printed above
/// it, so a message arriving while a line is half typed appears without disturbing the line.
///
/// Written by hand because a line editor that lets other output interleave is a few dozen lines
/// over termios, and no readline-style Swift package is available here.
final class ChatScreen: @unchecked Sendable {
    let prompt: String
    let interactive: Bool
    private let lock = NSLock()
    private var buffer: [UInt8] = []
    private var original = termios()

    init(prompt: String, interactive: Bool) {
        self.prompt = prompt
        self.interactive = interactive
        if interactive {
            tcgetattr(STDIN_FILENO, &original)
            var raw = original
            raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG | IEXTEN)
            raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
            withUnsafeMutableBytes(of: &raw.c_cc) { cc in
                cc[Int(VMIN)] = 1
                cc[Int(VTIME)] = 0
            }
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw)
        }
    }

    /// Puts the terminal back as it was.
    func restore() {
        guard interactive else { return }
        lock.withLock {
            emit("\r\u{1B}[2K")
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &original)
        }
    }

    /// Prints a line above the one being typed, then redraws the prompt and the typed text.
    func show(_ line: String) {
        lock.withLock {
            if interactive {
                // Raw mode: a newline inside a (multi-line) message needs its carriage return.
                emit("\r\u{1B}[2K" + line.replacingOccurrences(of: "\n", with: "\r\n") + "\r\n")
                redraw()
            } else {
                emit(line + "\n")
            }
        }
    }

    /// Draws the prompt (after the history is printed).
    func start() {
        guard interactive else { return }
        lock.withLock { redraw() }
    }

    private func redraw() {
        emit("\r\u{1B}[2K" + prompt + String(decoding: buffer, as: UTF8.self))
    }

    private func emit(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            if written <= 0 { return }
            bytes = bytes.dropFirst(written)
        }
    }

    /// The lines the user enters; ends on Ctrl-C, Ctrl-D on an empty line, or end of input.
    func lines() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let thread = Thread { [self] in
            if interactive {
                readInteractive(continuation)
            } else {
                while let line = readLine() { continuation.yield(line) }
            }
            continuation.finish()
        }
        thread.start()
        return stream
    }

    private func readInteractive(_ continuation: AsyncStream<String>.Continuation) {
        var byte: UInt8 = 0
        var escape = 0
        while read(STDIN_FILENO, &byte, 1) == 1 {
            if escape > 0 {
                // Skip the rest of an escape sequence (arrow keys and the like): ESC [ ... final byte.
                escape =
                    (escape == 1 && byte == UInt8(ascii: "[")) || (escape == 2 && !(0x40...0x7E).contains(byte)) ? 2 : 0
                continue
            }
            switch byte {
            case 0x1B:
                escape = 1
            case 0x0D, 0x0A:
                let line = lock.withLock { () -> String in
                    let line = String(decoding: buffer, as: UTF8.self)
                    buffer.removeAll()
                    emit("\r\u{1B}[2K")
                    redraw()
                    return line
                }
                continuation.yield(line)
            case 0x03:
                return
            case 0x04:
                if lock.withLock({ buffer.isEmpty }) { return }
            case 0x7F, 0x08:
                lock.withLock {
                    // Remove one whole UTF-8 character: continuation bytes, then its first byte.
                    while let last = buffer.last, last & 0xC0 == 0x80 { buffer.removeLast() }
                    if !buffer.isEmpty { buffer.removeLast() }
                    redraw()
                }
            case 0x15:
                lock.withLock {
                    buffer.removeAll()
                    redraw()
                }
            case 0x20...:
                lock.withLock {
                    buffer.append(byte)
                    // Draw once a character is complete (a UTF-8 continuation byte may follow).
                    if byte < 0x80 || String(validating: buffer, as: UTF8.self) != nil { redraw() }
                }
            default:
                break
            }
        }
    }
}
