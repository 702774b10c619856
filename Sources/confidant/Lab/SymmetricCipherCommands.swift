import ArgumentParser
import ConfidantCrypto
import Crypto
import Foundation

/// The symmetric ciphers `cipher encrypt|decrypt` offers.
enum RawAlgorithm: String, ExpressibleByArgument, CaseIterable {
    case sblock
    case aesGCM = "aes-gcm"
    case chachaPoly = "chacha20-poly1305"
}

/// Options shared by `cipher encrypt` and `cipher decrypt`.
struct RawCipherOptions: ParsableArguments {
    @Option(name: .long, help: "sblock (the seed's cipher), aes-gcm or chacha20-poly1305.") var algorithm: RawAlgorithm
    @Option(name: .long, help: "sblock only: the key as UTF-8 text (as the seed app used its key string).") var key:
        String?
    @Option(name: .long, help: "The key as hex (32 bytes for aes-gcm and chacha20-poly1305).") var keyHex: String?
    @Option(name: .long, help: "Input file (default: stdin).") var `in`: String?
    @Option(name: .long, help: "Output file (default: stdout).") var out: String?

    func validate() throws {
        guard (key == nil) != (keyHex == nil) else { throw ValidationError("give exactly one of --key or --key-hex") }
        if algorithm != .sblock, key != nil {
            throw ValidationError("\(algorithm.rawValue) takes --key-hex with 32 bytes")
        }
    }

    func keyBytes() throws -> [UInt8] {
        guard let keyHex else { return Array((key ?? "").utf8) }
        guard let bytes = Hex.decode(keyHex) else {
            throw CLIError.invalidArgument("--key-hex is not an even number of hex digits")
        }
        if algorithm != .sblock, bytes.count != 32 {
            throw CLIError.invalidArgument(
                "\(algorithm.rawValue) needs a 32-byte key (64 hex digits), got \(bytes.count) bytes")
        }
        return bytes
    }

    /// Runs the S-block over the input in 64 KiB chunks: the same operation both ways.
    func streamSBlock() throws {
        Terminal.printError(
            "warning: the S-block cipher has no integrity protection; use it only for study or seed compatibility")
        var cipher = try SBlockCipher(key: keyBytes())
        let input: FileHandle
        if let path = self.in, path != "-" {
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw CLIError.unreadable(path: path, reason: "no such file or no permission")
            }
            input = handle
        } else {
            input = .standardInput
        }
        let output: FileHandle
        if let path = out, path != "-" {
            guard FileManager.default.createFile(atPath: path, contents: nil),
                let handle = FileHandle(forWritingAtPath: path)
            else {
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
    }
}

struct CipherEncryptCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encrypt",
        abstract: "Raw bytes in, raw bytes out: sblock, or an AEAD with a random 12-byte nonce prepended.",
        discussion: "aes-gcm and chacha20-poly1305 output nonce (12) ‖ ciphertext ‖ tag (16), read whole into memory.")

    @OptionGroup var options: RawCipherOptions

    func run() async throws {
        if options.algorithm == .sblock { return try options.streamSBlock() }
        let key = SymmetricKey(data: try options.keyBytes())
        let input = try FileIO.read(options.in)
        let sealed: Data?
        switch options.algorithm {
        case .aesGCM: sealed = try AES.GCM.seal(input, using: key).combined
        case .chachaPoly: sealed = try ChaChaPoly.seal(input, using: key).combined
        case .sblock: sealed = nil
        }
        try FileIO.write(sealed ?? Data(), to: options.out, binary: true)
    }
}

struct CipherDecryptCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decrypt", abstract: "The inverse of `cipher encrypt`; AEAD input that was altered is refused.")

    @OptionGroup var options: RawCipherOptions

    func run() async throws {
        if options.algorithm == .sblock { return try options.streamSBlock() }
        let key = SymmetricKey(data: try options.keyBytes())
        let input = try FileIO.read(options.in)
        guard input.count >= 28 else {
            throw CLIError.invalidArgument("input is \(input.count) bytes: too short to hold a nonce and a tag")
        }
        let plain: Data
        do {
            switch options.algorithm {
            case .aesGCM: plain = try AES.GCM.open(AES.GCM.SealedBox(combined: input), using: key)
            case .chachaPoly: plain = try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: input), using: key)
            case .sblock: plain = Data()
            }
        } catch {
            throw CLIError.invalidArgument("authentication failed: the input was altered or the key is wrong")
        }
        try FileIO.write(plain, to: options.out, binary: false, secret: true)
    }
}

enum Hex {
    static func decode(_ string: String) -> [UInt8]? {
        let digits = Array(string.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                return nil
            }
            out.append(byte)
        }
        return out
    }
}
