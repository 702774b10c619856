import Fluent
import Foundation
import Logging
import NIOPosix

/// Every service of one relay, wired once (as a Vapor app's `configure.swift` does): the HTTP
/// handlers and the stream reach the database only through these. A class: the API, the stream
/// and the admin API share one instance rather than copies of its many fields.
final class RelayServices: Sendable {
    let configuration: ServerConfiguration
    let database: RelayDatabase
    let mailbox: MailboxService
    let devices: DeviceService
    let sessions: SessionService
    let accounts: AccountService
    let directory: DirectoryService
    let signIn: SignInService
    let challenges: DeviceChallenges
    let signInSettings: SignInSettingsService
    let prekeys: PrekeyService
    let blobs: BlobService
    let backups: BackupObjectService
    /// Where the bytes of blobs and backup objects live.
    let store: any BlobStore
    /// Outages of the database or disk, logged without flooding.
    let outages = OutageLog()

    init(
        configuration: ServerConfiguration, database: RelayDatabase, hub: MailboxHub, cache: SessionCache,
        passwordHashing: NIOThreadPool, logger: Logger
    ) throws {
        let now = configuration.now
        let secrets = try AuthSecrets.load(from: configuration.resolvedAuthKeyFile)
        let mailer: any CodeMailer =
            configuration.smtp.map { SMTPMailer(configuration: $0) }
            ?? DevelopmentOutbox(directory: configuration.dataDirectory.appendingPathComponent("outbox"))
        let files = BlobFiles(
            directory: BlobFiles.directory(in: configuration.dataDirectory),
            minimumFreeBytes: configuration.minimumFreeBytes, pace: UploadPace(configuration: configuration),
            freeSpace: configuration.freeSpace)
        let store: any BlobStore =
            database.isPostgres
            ? BlobChunks(
                database: database, pace: UploadPace(configuration: configuration), earlierFiles: files, now: now)
            : files
        self.store = store
        let revoker = SessionRevoker(cache: cache, hub: hub, database: database)
        self.configuration = configuration
        self.database = database
        mailbox = MailboxService(
            database: database, hub: hub,
            limits: .init(
                mailboxLimit: configuration.mailboxLimit, sendRate: configuration.sendRate,
                retention: configuration.mailboxRetention),
            now: now)
        devices = DeviceService(mailbox: mailbox, revoker: revoker, now: now)
        sessions = SessionService(
            database: database, devices: devices, cache: cache, activity: DeviceActivity(database: database),
            revoker: revoker, lifetime: configuration.sessionLifetime, now: now)
        accounts = AccountService(
            devices: devices, revoker: revoker, passwords: PasswordPolicy(cost: configuration.passwordCost),
            blobs: store, configuration: configuration, passwordHashing: passwordHashing)
        directory = DirectoryService(database: database)
        challenges = DeviceChallenges(secrets: secrets, database: database, now: now)
        signIn = SignInService(
            accounts: accounts, sessions: sessions, secrets: secrets, challenges: challenges, mailer: mailer,
            configuration: configuration, logger: logger)
        signInSettings = SignInSettingsService(accounts: accounts, secrets: secrets, now: now)
        prekeys = PrekeyService(mailbox: mailbox, claims: configuration.prekeyClaims, now: now)
        let quota = StorageQuota(bytes: configuration.storageQuotaBytes)
        blobs = BlobService(
            database: database, store: store, maximumBytes: configuration.maximumBlobBytes, quota: quota, now: now)
        backups = BackupObjectService(
            database: database, store: store, maximumBytes: configuration.maximumBackupObjectBytes, quota: quota,
            now: now)
    }
}
