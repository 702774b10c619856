import ArgumentParser
import ConfidantServer
import Foundation

/// Where a relay keeps its data: shared by `serve` and `admin`, which work on the same database.
struct RelayStorageOptions: ParsableArguments {
    @Option(help: "sqlite:PATH or postgres://user:password@host:port/database (default: sqlite in the data directory).")
    var database: String?
    @Option(help: "Directory for blobs and the default SQLite file.") var dataDir = ".confidant-server"
    @Option(
        help:
            "The 32-byte key file that encrypts sign-in secrets (default: auth.key in the data directory, created if missing). Every instance sharing a database needs the same one."
    )
    var authKeyFile: String?

    var dataDirectory: URL { URL(fileURLWithPath: dataDir) }

    /// The embedded defaults with these locations.
    func configuration() throws -> ServerConfiguration {
        var configuration = ServerConfiguration.embedded(dataDirectory: dataDirectory)
        if let database {
            do { configuration.database = try DatabaseLocation(parsing: database) } catch {
                throw ValidationError(error.description)
            }
        }
        configuration.authKeyFile = authKeyFile.map { URL(fileURLWithPath: $0) }
        return configuration
    }
}
