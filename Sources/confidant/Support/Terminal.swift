import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Standard streams and terminal helpers for the CLI.
enum Terminal {
    static var stdinIsTTY: Bool { isatty(STDIN_FILENO) == 1 }
    static var stdoutIsTTY: Bool { isatty(STDOUT_FILENO) == 1 }
    static var stderrIsTTY: Bool { isatty(STDERR_FILENO) == 1 }

    static func printError(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }

    /// Reads a line from the controlling terminal with echo turned off.
    static func readSecret(prompt: String) throws -> String {
        let fd = open("/dev/tty", O_RDWR)
        guard fd >= 0 else { throw CLIError.noTerminal }
        defer { close(fd) }
        _ = prompt.withCString { write(fd, $0, strlen($0)) }
        var original = termios()
        tcgetattr(fd, &original)
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(fd, TCSAFLUSH, &silent)
        defer {
            tcsetattr(fd, TCSAFLUSH, &original)
            _ = write(fd, "\n", 1)
        }
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1, byte != UInt8(ascii: "\n") { bytes.append(byte) }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Errors the CLI itself raises; library errors pass through with their own messages.
enum CLIError: Error, CustomStringConvertible {
    case noTerminal
    case noPassphrase
    case passphraseMismatch
    case emptyPassphrase
    case unreadable(path: String, reason: String)
    case unwritable(path: String, reason: String)
    case binaryToTerminal
    case invalidArgument(String)

    var description: String {
        switch self {
        case .noTerminal: return "no terminal to ask for a passphrase; use --passphrase-file or CONFIDANT_PASSPHRASE"
        case .noPassphrase:
            return "a passphrase is needed: give --passphrase-file, set CONFIDANT_PASSPHRASE, or run on a terminal"
        case .passphraseMismatch: return "the two passphrases differ; nothing was written"
        case .emptyPassphrase: return "the passphrase is empty; choose one of at least 8 characters"
        case .unreadable(let path, let reason): return "cannot read \(path): \(reason)"
        case .unwritable(let path, let reason): return "cannot write \(path): \(reason)"
        case .binaryToTerminal: return "refusing to write binary output to a terminal; use --out FILE or a pipe"
        case .invalidArgument(let why): return why
        }
    }
}

extension Terminal {
    /// Asks a yes/no question on the terminal; only "y" or "yes" is yes.
    static func confirm(_ question: String) throws -> Bool {
        FileHandle.standardOutput.write(Data(question.utf8))
        guard let answer = readLine() else { return false }
        return ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased())
    }
}
