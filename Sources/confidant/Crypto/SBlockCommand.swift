import ArgumentParser
import ConfidantCrypto
import Foundation

struct SBlockCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sblock",
        abstract: "Encrypt or decrypt with the seed's S-block stream cipher (legacy; for study and compatibility).",
        discussion: "Encryption and decryption are the same operation. Streams input of any size in 64 KiB chunks."
    )

    @Option(name: .long, help: "The key as UTF-8 text (as the seed app used its key string).")
    var key: String?

    @Option(name: .long, help: "The key as hex bytes.")
    var keyHex: String?

    @Option(name: .long, help: "Input file (default: stdin).")
    var `in`: String?

    @Option(name: .long, help: "Output file (default: stdout).")
    var out: String?

    func validate() throws {
        guard (key == nil) != (keyHex == nil) else { throw ValidationError("give exactly one of --key or --key-hex") }
    }

    func run() async throws {
        Terminal.printError("warning: the S-block cipher has no integrity protection; use it only for study or seed compatibility")
        let keyBytes: [UInt8]
        if let keyHex {
            guard let bytes = Hex.decode(keyHex) else { throw CLIError.invalidArgument("--key-hex is not an even number of hex digits") }
            keyBytes = bytes
        } else {
            keyBytes = Array((key ?? "").utf8)
        }
        var cipher = try SBlockCipher(key: keyBytes)
        let input: FileHandle
        if let path = self.in, path != "-" {
            guard let handle = FileHandle(forReadingAtPath: path) else { throw CLIError.unreadable(path: path, reason: "no such file or no permission") }
            input = handle
        } else {
            input = .standardInput
        }
        let output: FileHandle
        if let path = out, path != "-" {
            guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
                throw CLIError.unwritable(path: path, reason: "cannot create the file")
            }
            output = handle
        } else {
            if Terminal.stdoutIsTTY { throw CLIError.binaryToTerminal }
            output = .standardOutput
        }
        while true {
            var chunk = [UInt8](try input.read(upToCount: 1 << 16) ?? Data())
            if chunk.isEmpty { break }
            cipher.apply(to: &chunk)
            try output.write(contentsOf: chunk)
        }
        try output.synchronize()
    }
}

enum Hex {
    static func decode(_ string: String) -> [UInt8]? {
        let digits = Array(string.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(byte)
        }
        return out
    }
}
