import Foundation
import NIOSSL

/// Whom the client trusts for `https://` and `wss://`: the system's certificate authorities,
/// plus those in the PEM file `CONFIDANT_CA_FILE` names (a self-hosted relay with a private CA).
enum ServerTrust {
    /// The environment variable naming extra trusted certificates.
    static let caFileVariable = "CONFIDANT_CA_FILE"

    /// TLS 1.2 or later, certificates and host names verified; the extra authorities added.
    static let tlsConfiguration: TLSConfiguration = {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        if let file = ProcessInfo.processInfo.environment[caFileVariable], !file.isEmpty {
            configuration.additionalTrustRoots = [.file(file)]
        }
        return configuration
    }()
}
