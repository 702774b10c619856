import ConfidantCrypto
import ConfidantKit
import Foundation
import Logging
import Observation

/// What the app holds for its one user: the profile passphrase once known, the signed-in
/// ``Messenger`` and the view models that outlive a page (the conversation list, a sign-in in
/// progress). Pages read and drive view models only; nothing here talks to the relay itself.
@MainActor @Observable
final class AppSession {
    /// Where the app stands, which decides what `/` shows.
    enum Stage: Equatable {
        /// The profile has a device key and the passphrase is not known yet.
        case locked
        /// No account is signed in on this profile (or the passphrase for a new one is not chosen).
        case signedOut
        /// Signed in.
        case signedIn
    }

    let configuration: AppConfiguration
    private(set) var passphrase: String?
    private(set) var messenger: Messenger?
    /// "Name <e-mail>" of the signed-in account.
    private(set) var signedInName = ""
    /// The signed-in account's name as others see it, and its user id.
    private(set) var signedInDisplayName = ""
    private(set) var myID: UUID?
    /// The server and e-mail of the account last signed in here: the sign-in form offers them
    /// again after signing out.
    private(set) var lastAccount: (server: String, email: String)?
    private(set) var conversations: ConversationsViewModel?
    /// The account's settings (kept while signed in: an authenticator being set up spans pages).
    private(set) var settings: SettingsViewModel?
    private var conversationsTask: Task<Void, Never>?
    /// The sign-in or sign-up in progress, and its submission.
    private(set) var auth: AuthViewModel?
    private var authTask: Task<Void, Never>?
    /// The sign-up's picture, set once signed in; kept across a sign-up form that failed.
    private(set) var pendingAvatar: Avatar?
    /// Why the sign-up's picture was not set (shown on the conversation list).
    private(set) var avatarProblem: String?
    /// The submission in `authTask` returned (signed in, or failed with errors to show).
    private var authFinished = false
    /// The profile's vault (locked until its own passphrase is given).
    let vault: VaultViewModel
    /// A message held because a verified contact's key changed, per peer, until the user confirms.
    var heldDrafts: [UUID: String] = [:]
    /// What a form's post said, shown once by the page it redirected to (post/redirect/get: a
    /// reload never posts the form again).
    var flash: (error: String?, notice: String?)?
    /// The directory of the last backup to a directory, offered again.
    var lastBackupDirectory = ""
    /// The vault backup or restore under way (it outlives the request that started it).
    private var vaultTransferTask: Task<Void, Never>?
    private let logger: Logger

    init(configuration: AppConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        passphrase = configuration.passphrase
        vault = VaultViewModel(directory: configuration.profile.directory.appendingPathComponent("vault"))
    }

    var stage: Stage {
        if messenger != nil { return .signedIn }
        if passphrase == nil && hasDeviceKey { return .locked }
        return .signedOut
    }

    private var hasDeviceKey: Bool {
        FileManager.default.fileExists(
            atPath: configuration.profile.directory.appendingPathComponent("identity.key").path)
    }

    /// Whether the sign-up and sign-in forms must ask for a new profile passphrase.
    var needsNewPassphrase: Bool { passphrase == nil && !hasDeviceKey }

    /// A new profile passphrase was chosen in a sign-up or sign-in that has not succeeded yet:
    /// the next attempt uses it without asking again.
    var keepsNewPassphrase: Bool { passphrase != nil && !hasDeviceKey }

    /// Removes what an interrupted upload left (plaintext waiting to be encrypted), then opens
    /// the profile with the passphrase the command was given, if any.
    func start() async {
        let directory = configuration.profile.directory
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in leftovers where name.hasPrefix(VaultUploads.prefix) {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
        guard let passphrase else { return }
        do {
            try await open(passphrase: passphrase)
        } catch {
            logger.notice("the profile did not open with the given passphrase: \(error)")
            self.passphrase = nil
        }
    }

    /// Checks the passphrase against the device key and opens the profile when it is signed in.
    /// - Throws: `IdentityKeyFileError` for a wrong passphrase.
    func unlock(passphrase: String) async throws {
        guard try configuration.profile.keyStore.loadIdentity(passphrase: passphrase) != nil else {
            self.passphrase = passphrase
            return
        }
        self.passphrase = passphrase
        try await open(passphrase: passphrase)
    }

    private func open(passphrase: String) async throws {
        do {
            await signedIn(try Messenger.open(configuration.profile, passphrase: passphrase))
        } catch ConfidantKitError.notSignedIn {
            messenger = nil
        }
    }

    private func signedIn(_ messenger: Messenger) async {
        let account = await messenger.account
        signedInName = "\(account.displayName) <\(account.email)>"
        signedInDisplayName = account.displayName
        myID = await messenger.me
        lastAccount = (account.serverURL.absoluteString, account.email)
        if let avatar = pendingAvatar {
            pendingAvatar = nil
            do {
                try await messenger.setAvatar(avatar)
            } catch {
                avatarProblem = "Your picture was not saved (\(error)); set it again under Profile."
            }
        }
        self.messenger = messenger
        auth = nil
        authTask = nil
        let conversations = ConversationsViewModel(messenger: messenger)
        self.conversations = conversations
        settings = SettingsViewModel(messenger: messenger)
        conversationsTask = Task {
            await messenger.startLive()
            async let sent: Int? = try? messenger.flushOutbox()
            _ = await sent
            await conversations.run()
        }
    }

    // MARK: Sign-in and sign-up

    /// A new sign-in or sign-up form, replacing one in progress.
    func newAuth(passphrase newPassphrase: String?) -> AuthViewModel? {
        authTask?.cancel()
        auth?.cancelStep()
        guard let key = passphrase ?? newPassphrase else { return nil }
        let auth = AuthViewModel(profile: configuration.profile, passphrase: key)
        auth.serverAddress = lastAccount?.server ?? configuration.defaultServer
        auth.allowInsecureHTTP = configuration.allowInsecureHTTP
        self.auth = auth
        return auth
    }

    /// Keeps the picture a sign-up form chose while the form is shown again (a field was wrong).
    func keepAvatar(_ avatar: Avatar) { pendingAvatar = avatar }

    /// Submits the form and waits until the sign-in finished or a step waits for the user; a
    /// picture chosen at sign-up is set once the account exists.
    func submitAuth(newPassphrase: String?, avatar: Avatar? = nil) async {
        guard let auth, auth.validate() else { return }
        pendingAvatar = avatar
        // The device key is written with this passphrase by the submission.
        if passphrase == nil { passphrase = newPassphrase }
        authFinished = false
        authTask = Task {
            await auth.submit()
            self.authFinished = true
        }
        await waitForAuth()
    }

    /// Answers the pending step and waits as `submitAuth` does.
    func answerStep(_ answer: String) async {
        guard let auth, auth.pendingStep != nil else { return }
        auth.stepAnswer = answer
        auth.answerStep()
        await waitForAuth()
    }

    /// Has the pending e-mail code mailed again and waits as `submitAuth` does.
    func resendCode() async {
        guard let auth, auth.pendingStep?.method == .emailCode else { return }
        auth.resendCode()
        await waitForAuth()
    }

    /// Abandons the sign-in at its pending step.
    func cancelAuth() {
        auth?.cancelStep()
        auth = nil
        authTask = nil
    }

    private func waitForAuth() async {
        guard let auth, authTask != nil else { return }
        for await settled in observedValues({ auth.pendingStep != nil || self.authFinished }) {
            if settled { break }
        }
        if let messenger = auth.messenger {
            justSignedUp = auth.mode == .signUp
            await signedIn(messenger)
        }
    }

    /// A sign-up just finished: the next page is the sign-in settings, once (thesis 003, fig. 3.5:
    /// the protection is chosen right after the account is made, or skipped).
    private var justSignedUp = false

    /// Where a signed-in browser lands: the sign-in settings with a word of welcome right after a
    /// sign-up, else the conversations.
    func landing() -> AppRoute {
        guard justSignedUp else { return .conversations }
        justSignedUp = false
        flash = (
            nil,
            "Your account is ready. Choose how you sign in below, or skip this for now: your password, and an e-mailed code on a new device, protect it."
        )
        return .settings
    }

    /// The flash, once: the page that shows it clears it.
    func takeFlash() -> (error: String?, notice: String?)? {
        defer { flash = nil }
        return flash
    }

    // MARK: The vault

    /// Runs a vault backup or restore in the background; the vault page follows it through
    /// `vault.transfer`. The view model refuses a second one while one runs.
    func startVaultTransfer(_ work: @escaping @MainActor @Sendable () async -> Void) {
        let previous = vaultTransferTask
        vaultTransferTask = Task { @MainActor in
            await previous?.value
            await work()
        }
    }

    // MARK: Signing out

    /// Signs this device out on the server and here; the device key stays for the next sign-in.
    func signOut() async -> String? {
        guard let conversations else { return nil }
        await conversations.signOut()
        guard conversations.isSignedOut else {
            return conversations.error ?? "The server did not sign this device out."
        }
        await forgetSignedIn()
        return nil
    }

    /// The account's name changed (Profile): the header shows the new one.
    func accountRenamed() async {
        guard let messenger else { return }
        let account = await messenger.account
        signedInName = "\(account.displayName) <\(account.email)>"
        signedInDisplayName = account.displayName
    }

    /// The account was deleted from the settings: this device is signed out.
    func accountDeleted() async {
        lastAccount?.email = ""
        await forgetSignedIn()
    }

    private func forgetSignedIn() async {
        conversationsTask?.cancel()
        await messenger?.stopLive()
        messenger = nil
        myID = nil
        conversations = nil
        settings = nil
        heldDrafts = [:]
    }

    /// Stops the live connection (the app is closing).
    func stop() async {
        vaultTransferTask?.cancel()
        conversationsTask?.cancel()
        await messenger?.stopLive()
    }
}

/// Where uploaded files wait to be encrypted into the vault: a 0700 folder per upload in the
/// profile, removed when the upload ends and, after a crash, when the app starts.
enum VaultUploads {
    static let prefix = "uploads-"
}
