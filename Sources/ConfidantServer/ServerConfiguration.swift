import ConfidantAuth
import Foundation

/// Where the relay keeps its tables.
public enum DatabaseLocation: Sendable, Equatable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(url: String)

    /// Parses `sqlite:PATH` or `postgres://…` / `postgresql://…`.
    public init(parsing text: String) throws(ServerConfigurationError) {
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            guard !path.isEmpty else {
                throw .badDatabase(text, "give a file after `sqlite:`, e.g. sqlite:./relay.sqlite")
            }
            self = .sqlite(path: path)
        } else if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            self = .postgres(url: text)
        } else {
            throw .badDatabase(text, "use sqlite:PATH or postgres://user:password@host:port/database")
        }
    }

    /// Safe to print: a PostgreSQL password is masked.
    public var description: String {
        switch self {
        case .sqlite(let path): return "sqlite:\(path)"
        case .postgres(let url):
            if let components = URLComponents(string: url), components.password != nil {
                var masked = components
                masked.password = "***"
                return masked.string ?? "postgres://***"
            }
            return url
        }
    }
}

public enum ServerConfigurationError: Error, CustomStringConvertible, Equatable {
    case badDatabase(String, String)
    case weakPasswordHashing(Int)
    /// An admin token file without the metrics listener the admin API is served on.
    case adminAPIWithoutMetrics

    public var description: String {
        switch self {
        case .badDatabase(_, let hint): "Unrecognised --database: \(hint)."
        case .weakPasswordHashing(let cost): "bcrypt cost \(cost) is below 12; only tests may lower it."
        case .adminAPIWithoutMetrics:
            "--admin-token-file serves the admin API on the metrics listener: give --metrics-port too."
        }
    }
}

/// An SMTP server that relays sign-in codes (RFC 5321; STARTTLS whenever the server offers it).
public struct SMTPConfiguration: Sendable, Equatable {
    public var host: String
    public var port: Int
    /// The From address of sign-in messages.
    public var sender: String
    /// Refuse to send without STARTTLS: by default for every host but this machine's loopback,
    /// so that sign-in codes do not cross a network in the clear.
    public var requireTLS: Bool
    /// A PEM file of certificates to trust instead of the system's (a private mail relay).
    public var trustRootsFile: String?
    /// The name to verify the server's certificate against; `host` unless set.
    public var tlsServerName: String?
    /// The name this server gives in EHLO.
    public var heloName = "confidant.invalid"

    public init(host: String, port: Int = 25, sender: String) {
        self.host = host
        self.port = port
        self.sender = sender
        requireTLS = !Self.isLoopback(host)
    }

    /// `localhost`, 127.0.0.0/8 and ::1.
    static func isLoopback(_ host: String) -> Bool {
        let host = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
        if host == "localhost" || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}

/// Who may create an account.
public enum Registration: String, Sendable, CaseIterable {
    /// Anyone who reaches the server.
    case open
    /// Only with an invite code an operator made (`confidant admin invite create`).
    case invite
    /// Nobody: accounts that exist stay.
    case closed
}

public enum SQLiteSynchronous: String, Sendable, CaseIterable {
    case normal = "NORMAL"
    case full = "FULL"
}

/// Everything `confidant serve` can set. Defaults are the production values.
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// Serve HTTPS (and WSS) with this certificate and key; nil: plain HTTP (loopback, or behind
    /// a TLS-terminating proxy).
    public var tls: TLSFiles?
    /// 0 asks the system for a free port (tests).
    public var port = 8080
    /// Serve Prometheus metrics (`GET /metrics`) on a listener of their own here; nil: none.
    public var metrics: MetricsAddress?
    /// With `metrics`: serve the admin API (`/admin/v1/…`) on the metrics listener to callers that
    /// send the token this file holds (only its owner may read it); nil: no admin API.
    public var adminTokenFile: URL?
    public var database: DatabaseLocation
    /// Holds blobs (and the SQLite file by default).
    public var dataDirectory: URL
    public var resolvedAuthKeyFile: URL { authKeyFile ?? dataDirectory.appendingPathComponent("auth.key") }
    public var sessionLifetime: TimeInterval = 30 * 24 * 3600
    /// bcrypt cost; at least 12 outside tests.
    public var passwordCost = 12
    public var maximumEnvelopeBytes = 64 * 1024
    public var maximumJSONBodyBytes = 4 * 1024 * 1024
    public var maximumBlobBytes = 25 * 1024 * 1024
    /// Free space the data directory's disk keeps: attachments and backup objects that would
    /// leave less are refused (503 `storage_unavailable`), so messages can still be stored.
    public var minimumFreeBytes: Int64 = 256 << 20
    /// How much a process may still write where blobs go (nil when the file system does not say):
    /// `statvfs`, or a disk of the tests' own size.
    var freeSpace: @Sendable (URL) -> Int64? = DiskSpace.statvfsAvailable
    /// How long an attachment blob stays when not every device it was meant for fetched it (as
    /// Signal keeps attachments for about a month); fetched by all, it goes at once.
    public var attachmentRetention: TimeInterval = 30 * 86_400
    /// The largest backup object (one encrypted vault file); streamed to disk, never held in memory.
    public var maximumBackupObjectBytes: Int64 = 4 * 1024 * 1024 * 1024
    public var maximumAvatarBytes = 1024 * 1024
    /// Delays and lock-out for sign-in failures (per account and per network address).
    public var signInPolicy = RiskPolicy()
    /// Sign-ups from one address before delays start; the same policy then applies.
    public var freeSignUpsPerAddress = 5
    /// Who may sign up: anyone (the default), holders of an invite code, or nobody.
    public var registration = Registration.open
    /// SQLite durability: `normal` (default) survives a crash of the server process; `full`
    /// also survives a power cut, at one fsync per message.
    public var sqliteSynchronous = SQLiteSynchronous.normal
    /// How long an SQLite write waits for a lock another process holds (a backup, a `sqlite3`
    /// shell) before the request is answered `503 database_unavailable`.
    public var sqliteBusyTimeoutMilliseconds = 5_000
    /// PostgreSQL connections per event loop (one loop per core): a request that waits on a row
    /// lock holds its connection, so several per loop keep the others going. Each instance opens
    /// up to this times its cores, plus one for notifications.
    public var postgresConnectionsPerEventLoop = 8
    /// How long a request waits for a database connection before it is answered
    /// `503 database_unavailable` (the database is down, or overloaded).
    public var databaseWaitSeconds = 10
    /// How long opening a PostgreSQL connection (TCP, start-up and authentication) may take before
    /// the attempt fails as `503 database_unavailable`.
    public var postgresConnectSeconds = 10
    /// How long a PostgreSQL write may go unanswered before it is given up as
    /// `503 database_unavailable`: PostgresNIO can leave a transaction whose connection died in a
    /// restart neither committed nor failed, and the writes behind it would wait for ever.
    public var postgresWriteSeconds = 20
    /// Reverse proxies whose `X-Forwarded-For` is believed: the client is the rightmost address
    /// in it that is not one of these. Empty (the default): the socket's peer is the client.
    public var trustedProxies: [IPNetwork] = []
    /// The 32-byte key that encrypts sign-in secrets (arithmetic mappings, TOTP secrets); created
    /// on first start when missing. Every instance sharing a database needs the same file.
    public var authKeyFile: URL?
    /// Sign-in transactions (and e-mail codes) expire after this long.
    public var signInTransactionLifetime: TimeInterval = 10 * 60
    /// An account whose e-mail address no sign-in has proved is deleted after this long.
    public var unverifiedAccountLifetime: TimeInterval = 7 * 86_400
    /// Wrong answers one transaction accepts before it is closed.
    public var signInAttemptsPerTransaction = 5
    /// Where e-mail sign-in codes go; nil: the development outbox in the data directory.
    public var smtp: SMTPConfiguration?
    /// Seconds before an e-mail code can be sent again.
    public var emailCodeResendSeconds: TimeInterval = 60
    /// Sign-ins started (each stores a transaction and may send an e-mail code), per account and
    /// per network address.
    public var signInStarts = SignInStartLimits()
    /// Bytes of blobs and backup objects one account may store.
    public var storageQuotaBytes: Int64 = 5 << 30
    /// Entries one device's mailbox may hold unacknowledged; more sends to it are refused until
    /// it reads some (`quota_exceeded`).
    public var mailboxLimit = 100_000
    /// Unacknowledged mailbox entries older than this are deleted (a device away for longer
    /// misses them, as with Signal's 30 days).
    public var mailboxRetention: TimeInterval = 30 * 86_400
    /// Entries of the administrative audit older than this are deleted; nil keeps them.
    public var auditRetention: TimeInterval?
    /// How often the server purges expired mailbox entries, sign-in transactions and limits.
    public var maintenanceInterval: Duration = .seconds(3600)
    /// On SQLite, how often the server reads the sessions another process (`confidant admin`)
    /// ended; PostgreSQL tells it at once.
    public var revocationPollInterval: Duration = .seconds(1)
    /// Messages one account may send: a burst, then a steady rate (per server instance).
    public var sendRate = TokenBucketSetting(burst: 3_000, perSecond: 60)
    /// Prekey bundles one user may claim (each may use up a one-time prekey of someone else's
    /// device): 200 claims an hour, so that nobody drains other devices' one-time prekeys.
    public var prekeyClaims = RateLimitSetting(limit: 200, window: 3600)
    /// How often a stream is pinged; a peer that has not answered the last ping by the next one
    /// is closed (a silent connection is not held forever).
    public var streamPingSeconds = 30
    /// Seconds a stream's client has to answer the challenge with its device's signature before
    /// the stream is closed (4408; the client may connect again).
    public var streamProofSeconds = 15
    /// HTTP connections with no byte read or written for this long are closed (a stream, once
    /// upgraded, is watched by its pings instead: `streamPingSeconds`).
    public var idleTimeoutSeconds = 120
    /// Seconds a body the relay collects (JSON, avatars) may take to arrive once its headers
    /// did, and the grace an upload has before `minimumUploadBytesPerSecond` applies; a slower
    /// body is answered `408 request_timeout` and its connection closed.
    public var requestBodySeconds = 30
    /// What an upload (a blob, a backup object) must average once `requestBodySeconds` have
    /// passed: 16 KiB/s, a slow mobile link, so that a trickle cannot hold an upload slot.
    public var minimumUploadBytesPerSecond: Int64 = 16 << 10
    /// The wall clock every time-based rule reads (sessions, throttles, codes, transactions);
    /// tests substitute one they move by hand.
    public var now: @Sendable () -> Date = { Date() }

    public init(database: DatabaseLocation, dataDirectory: URL) {
        self.database = database
        self.dataDirectory = dataDirectory
    }

    /// The embedded default: SQLite in `./.confidant-server/relay.sqlite`.
    public static func embedded(dataDirectory: URL = URL(fileURLWithPath: ".confidant-server")) -> ServerConfiguration {
        ServerConfiguration(
            database: .sqlite(path: dataDirectory.appendingPathComponent("relay.sqlite").path),
            dataDirectory: dataDirectory)
    }

    /// Fast password hashing and short lock-outs, for tests only.
    public mutating func useTestingSecurityParameters() {
        passwordCost = 4
        allowWeakPasswordHashing = true
    }

    var allowWeakPasswordHashing = false

    func validate() throws(ServerConfigurationError) {
        if passwordCost < 12 && !allowWeakPasswordHashing { throw .weakPasswordHashing(passwordCost) }
        if adminTokenFile != nil && metrics == nil { throw .adminAPIWithoutMetrics }
    }
}

/// How many sign-ins may start in a window: per account (an e-mail address cannot be flooded with
/// codes) and per network address.
public struct SignInStartLimits: Sendable {
    /// Per account: 10 in 10 minutes.
    public var perAccount = RateLimitSetting(limit: 10, window: 600)
    /// Per network address: 30 in 10 minutes.
    public var perAddress = RateLimitSetting(limit: 30, window: 600)

    public init() {}
}

/// At most `limit` events in each `window` seconds.
public struct RateLimitSetting: Sendable {
    public var limit: Int
    public var window: TimeInterval

    public init(limit: Int, window: TimeInterval) {
        self.limit = limit
        self.window = window
    }
}

/// A token bucket: `burst` events at once, refilled at `perSecond`.
public struct TokenBucketSetting: Sendable {
    public var burst: Double
    public var perSecond: Double

    public init(burst: Double, perSecond: Double) {
        self.burst = burst
        self.perSecond = perSecond
    }
}
