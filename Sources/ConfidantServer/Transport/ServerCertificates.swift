import Foundation
import Logging
import NIOCore
import NIOSSL
import Synchronization

/// Where the server's TLS certificate chain and private key are (PEM files).
public struct TLSFiles: Sendable, Equatable {
    public var certificateChain: String
    public var privateKey: String

    public init(certificateChain: String, privateKey: String) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }
}

/// Why the TLS files cannot be used.
public struct TLSFilesError: Error, CustomStringConvertible, Equatable {
    public let description: String
}

/// The certificate and key the server presents, read from their files at start and again on
/// `reload()` (SIGHUP): a renewed certificate is taken without a restart, and connections made
/// from then on present it. A reload that fails keeps what was there and says why.
final class ServerCertificates: Sendable {
    private struct Loaded: Sendable {
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
    }

    let files: TLSFiles
    private let current: Mutex<Loaded>

    init(files: TLSFiles) throws(TLSFilesError) {
        self.files = files
        current = Mutex(try Self.load(files))
    }

    private static func load(_ files: TLSFiles) throws(TLSFilesError) -> Loaded {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(files.certificateChain)
        } catch {
            throw TLSFilesError(description: "cannot read the certificate chain \(files.certificateChain): \(error)")
        }
        guard !chain.isEmpty else {
            throw TLSFilesError(description: "\(files.certificateChain) holds no PEM certificate")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: files.privateKey, format: .pem)
        } catch {
            throw TLSFilesError(description: "cannot read the private key \(files.privateKey): \(error)")
        }
        // A key that does not match the certificate would fail every handshake: refuse it now.
        do {
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
            configuration.minimumTLSVersion = .tlsv12
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw TLSFilesError(
                description:
                    "the private key \(files.privateKey) does not fit the certificate \(files.certificateChain)")
        }
        return Loaded(chain: chain, key: key)
    }

    /// Reads the files again; on failure the certificate in use stays.
    func reload() throws(TLSFilesError) {
        let loaded = try Self.load(files)
        current.withLock { $0 = loaded }
    }

    /// The server's TLS configuration: TLS 1.2 or later, presenting whatever was loaded last.
    var configuration: TLSConfiguration {
        let loaded = current.withLock { $0 }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: loaded.chain.map { .certificate($0) }, privateKey: .privateKey(loaded.key))
        configuration.minimumTLSVersion = .tlsv12
        configuration.sslContextCallback = { [self] _, promise in
            let loaded = current.withLock { $0 }
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = loaded.chain.map { .certificate($0) }
            override.privateKey = .privateKey(loaded.key)
            promise.succeed(override)
        }
        return configuration
    }
}
