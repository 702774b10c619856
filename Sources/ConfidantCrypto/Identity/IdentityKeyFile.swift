import Crypto
import Foundation

/// The passphrase-protected private key file of a device (format version 1).
///
/// ```
/// "CONFKEY" 0x01 | u8 kdf=1 (scrypt) | u8 log2N | u32 r | u32 p | 16 salt | 12 nonce | AES-256-GCM(secret) ‖ 16 tag
/// ```
/// The 46-byte header is the AES-GCM associated data, so parameters cannot be altered unnoticed.
/// The secret is the 144 bytes of ``PrivateIdentity``. Written with mode 0600, atomically.
public enum IdentityKeyFile {
    static let magic = Array("CONFKEY".utf8) + [0x01]
    static let kdfScrypt: UInt8 = 1
    static let headerCount = 8 + 1 + 1 + 4 + 4 + 16 + 12

    /// Encrypts an identity under a passphrase.
    public static func seal(
        _ identity: PrivateIdentity, passphrase: String, parameters: ScryptParameters = .interactive
    ) throws -> Data {
        let salt = (0..<16).map { _ in UInt8.random(in: .min ... .max) }
        let nonce = AES.GCM.Nonce()
        var header = magic
        header.append(kdfScrypt)
        header.append(parameters.log2N)
        header.appendBigEndian(parameters.r)
        header.appendBigEndian(parameters.p)
        header += salt
        header += Array(nonce)
        let key = try parameters.deriveKey(passphrase: passphrase, salt: salt)
        let box = try AES.GCM.seal(identity.secretBytes, using: key, nonce: nonce, authenticating: header)
        return Data(header) + box.ciphertext + box.tag
    }

    /// Decrypts a key file.
    /// - Throws: ``IdentityKeyFileError`` (not a key file, unsupported version, wrong passphrase or corrupted).
    public static func open<Bytes: DataProtocol>(_ bytes: Bytes, passphrase: String) throws -> PrivateIdentity {
        let all = Array(bytes)
        guard all.count >= 8, Array(all[0..<7]) == Array(magic[0..<7]) else { throw IdentityKeyFileError.notAKeyFile }
        guard all[7] == magic[7] else { throw IdentityKeyFileError.unsupportedVersion(all[7]) }
        let expected = headerCount + PrivateIdentity.secretByteCount + 16
        guard all.count == expected else { throw IdentityKeyFileError.truncated(expected: expected, actual: all.count) }
        var reader = ByteReader(all)
        let parameters: ScryptParameters
        let salt: [UInt8]
        let nonce: AES.GCM.Nonce
        do {
            _ = try reader.read(8)
            let kdf = try reader.readUInt8()
            guard kdf == kdfScrypt else { throw IdentityKeyFileError.unsupportedKDF(kdf) }
            parameters = try ScryptParameters(log2N: reader.readUInt8(), r: reader.readUInt32(), p: reader.readUInt32())
            salt = try reader.read(16)
            nonce = try AES.GCM.Nonce(data: reader.read(12))
        } catch let error as IdentityKeyFileError {
            throw error
        } catch let error as ScryptParametersError {
            throw IdentityKeyFileError.badParameters(error.description)
        } catch {
            throw IdentityKeyFileError.truncated(expected: expected, actual: all.count)
        }
        let header = Array(all[0..<headerCount])
        let sealed = reader.readRest()
        let key = try parameters.deriveKey(passphrase: passphrase, salt: salt)
        let secret: Data
        do {
            let box = try AES.GCM.SealedBox(nonce: nonce, ciphertext: sealed.dropLast(16), tag: sealed.suffix(16))
            secret = try AES.GCM.open(box, using: key, authenticating: header)
        } catch {
            throw IdentityKeyFileError.wrongPassphraseOrCorrupted
        }
        return try PrivateIdentity(secretBytes: Array(secret))
    }

    /// Writes a sealed key file with mode 0600, atomically (temporary file, then rename).
    /// - Parameters:
    ///   - identity: the private identity to seal.
    ///   - url: where the file goes.
    ///   - passphrase: what the key file's key is derived from with scrypt.
    ///   - parameters: the scrypt cost, stored in the file.
    ///   - overwrite: replace an existing file; by default an existing file is an error, so keys are never lost.
    public static func write(
        _ identity: PrivateIdentity, to url: URL, passphrase: String,
        parameters: ScryptParameters = .interactive, overwrite: Bool = false
    ) throws {
        let bytes = try seal(identity, passphrase: passphrase, parameters: parameters)
        try PrivateFile.write(bytes, to: url, overwrite: overwrite)
    }

    /// Reads and decrypts a key file.
    public static func read(from url: URL, passphrase: String) throws -> PrivateIdentity {
        let bytes: Data
        do { bytes = try Data(contentsOf: url) } catch {
            throw IdentityKeyFileError.unreadable(path: url.path, reason: error.localizedDescription)
        }
        return try open(bytes, passphrase: passphrase)
    }
}

/// Errors reading or writing a private key file.
public enum IdentityKeyFileError: Error, Equatable, CustomStringConvertible {
    case notAKeyFile
    case unsupportedVersion(UInt8)
    case unsupportedKDF(UInt8)
    case badParameters(String)
    case truncated(expected: Int, actual: Int)
    case wrongPassphraseOrCorrupted
    case unreadable(path: String, reason: String)

    public var description: String {
        switch self {
        case .notAKeyFile: return "this is not a Confidant private key file"
        case .unsupportedVersion(let v):
            return "key file version \(v) is newer than this version of Confidant understands"
        case .unsupportedKDF(let k): return "key file uses unknown key-derivation function \(k)"
        case .badParameters(let why): return "key file has unacceptable parameters: \(why)"
        case .truncated(let expected, let actual):
            return "key file is \(actual) bytes, expected \(expected): it is truncated or damaged"
        case .wrongPassphraseOrCorrupted: return "wrong passphrase, or the key file is corrupted"
        case .unreadable(let path, let reason): return "cannot read \(path): \(reason)"
        }
    }
}
