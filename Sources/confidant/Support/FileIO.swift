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
