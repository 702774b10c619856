import ConfidantCrypto
import Foundation

/// Reading inputs and writing outputs for commands that take `--in` / `--out` (default: stdin / stdout).
enum FileIO {
    static func read(_ path: String?) throws -> Data {
        guard let path, path != "-" else { return FileHandle.standardInput.readDataToEndOfFile() }
        do { return try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw CLIError.unreadable(path: path, reason: (error as NSError).localizedDescription)
        }
    }

    static func readText(_ path: String) throws -> String {
        String(decoding: try read(path), as: UTF8.self)
    }

    /// The longest first line `firstLine(of:)` takes: far beyond any passphrase.
    static let firstLineLimit = 65_536

    /// The first line of a passphrase file (or of stdin for "-"), without its newline, reading no
    /// more than `firstLineLimit` bytes of it: a file given by mistake (a photo, a disk image) is
    /// refused instead of read whole.
    static func firstLine(of path: String) throws -> String {
        let limit = firstLineLimit
        let head: Data
        if path == "-" {
            head = FileHandle.standardInput.readData(ofLength: limit + 1)
        } else {
            do {
                let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
                defer { try? handle.close() }
                head = try handle.read(upToCount: limit + 1) ?? Data()
            } catch {
                throw CLIError.unreadable(path: path, reason: (error as NSError).localizedDescription)
            }
        }
        // Split as these files always were: by Swift's "\n" character, which a "\r\n" is not, so
        // that a passphrase read from any file before reads the same now.
        let lines = String(decoding: head, as: UTF8.self).split(
            separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        guard lines.count > 1 || head.count <= limit else {
            throw CLIError.invalidArgument(
                "the first line of \(path) is longer than \(limit) bytes: a passphrase file holds the passphrase on its first line"
            )
        }
        return String(lines.first ?? "")
    }

    /// Writes to a file, or to stdout when `path` is nil or "-".
    /// - Parameter secret: the bytes are plaintext; the file is created 0600.
    static func write(_ data: Data, to path: String?, binary: Bool, secret: Bool = false, overwrite: Bool = false)
        throws
    {
        guard let path, path != "-" else {
            if binary, Terminal.stdoutIsTTY { throw CLIError.binaryToTerminal }
            FileHandle.standardOutput.write(data)
            return
        }
        if secret {
            try PrivateFile.write(data, to: URL(fileURLWithPath: path), overwrite: overwrite)
        } else {
            if !overwrite, FileManager.default.fileExists(atPath: path) { throw PrivateFileError.exists(path: path) }
            do { try data.write(to: URL(fileURLWithPath: path), options: .atomic) } catch {
                throw CLIError.unwritable(path: path, reason: (error as NSError).localizedDescription)
            }
        }
    }
}
