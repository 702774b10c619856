import ArgumentParser
import ConfidantServer
import Foundation

/// Where a relay keeps its data: `serve` and `admin` take the same options, so that an operator
/// runs both against one relay. Each is the flag, else its `CONFIDANT_*` variable, else the
/// settings file's (`--config`), else the default.
struct RelayStorageOptions: ParsableArguments {
    @Option(help: "sqlite:PATH or postgres://user:password@host:port/database (default: sqlite in the data directory).")
    var database: String?
    @Option(help: "Directory for blobs and the default SQLite file (default: .confidant-server).")
    var dataDir: String?
    @Option(
        help:
            "The 32-byte key file that encrypts sign-in secrets (default: auth.key in the data directory, created if missing). Every instance sharing a database needs the same one."
    )
    var authKeyFile: String?
    @Option(
        help:
            "A YAML file of settings: serve's options by their long names (nested keys join with -). CONFIDANT_* variables and flags win over it; admin commands read its database, data-dir and auth-key-file."
    )
    var config: String?

    static let defaultDataDirectory = ".confidant-server"

    /// The three locations, each from the strongest source that sets it.
    func locations() throws -> (database: String?, dataDir: String, authKeyFile: String?) {
        let names: Set<String> = ["database", "data-dir", "auth-key-file"]
        let settled = try ServeSettings.values(
            of: names, configPath: config, environment: ProcessInfo.processInfo.environment)
        return (
            database ?? settled["database"], dataDir ?? settled["data-dir"] ?? Self.defaultDataDirectory,
            authKeyFile ?? settled["auth-key-file"]
        )
    }

    /// The data directory in use.
    var dataDirectory: URL {
        get throws { URL(fileURLWithPath: try locations().dataDir) }
    }

    /// The embedded defaults with these locations.
    func configuration() throws -> ServerConfiguration {
        let (database, dataDir, authKeyFile) = try locations()
        var configuration = ServerConfiguration.embedded(dataDirectory: URL(fileURLWithPath: dataDir))
        if let database {
            do { configuration.database = try DatabaseLocation(parsing: database) } catch {
                throw ValidationError(error.description)
            }
        }
        configuration.authKeyFile = authKeyFile.map { URL(fileURLWithPath: $0) }
        return configuration
    }
}
