import ConfidantAPI
import ConfidantCrypto
import Foundation

/// Getting a profile signed in: opening one that is, creating an account, signing in (walking a
/// multi-step chain when the account asks for one), with this device's key registered.
enum ProfileSignIn {
    static func open(_ profile: ProfileStorage, passphrase: String) throws -> Messenger {
        guard let identity = try profile.keyStore.loadIdentity(passphrase: passphrase),
            FileManager.default.fileExists(atPath: profile.storeURL.path)
        else { throw ConfidantKitError.notSignedIn }
        let store = try LocalStore.open(at: profile.storeURL, identity: identity)
        guard let account = try store.account() else { throw ConfidantKitError.notSignedIn }
        guard account.token != nil else { throw ConfidantKitError.sessionExpired }
        return Messenger(identity: identity, account: account, store: store)
    }

    static func register(
        _ profile: ProfileStorage, passphrase: String, server: URL, form: Components.Schemas.SignUpRequest,
        answer: SignInAnswerer?, allowInsecureHTTP: Bool = false, diagnostics: DeliveryDiagnostics? = nil
    ) async throws -> Messenger {
        try ServerAddress.check(server, allowInsecureHTTP: allowInsecureHTTP)
        let relay = RelayClient(serverURL: server, token: nil)
        if let existing = try existingAccount(profile, passphrase: passphrase),
            existing.email.lowercased() != form.email.lowercased()
        {
            throw ConfidantKitError.profileBelongsToOther(email: existing.email)
        }
        switch try await relay.call({ try await $0.signUp(body: .json(form)) }) {
        case .created: break
        case .default(let status, let response): throw problem(status, response)
        }
        return try await login(
            profile, passphrase: passphrase, server: server, email: form.email, password: form.password,
            newDeviceKey: false, answer: answer, allowInsecureHTTP: allowInsecureHTTP, diagnostics: diagnostics)
    }

    private static func existingAccount(_ profile: ProfileStorage, passphrase: String) throws -> AccountState? {
        guard let identity = try profile.keyStore.loadIdentity(passphrase: passphrase),
            FileManager.default.fileExists(atPath: profile.storeURL.path)
        else { return nil }
        return try LocalStore.open(at: profile.storeURL, identity: identity).account()
    }

    static func login(
        _ profile: ProfileStorage, passphrase: String, server: URL?, email: String, password: String,
        newDeviceKey: Bool, answer: SignInAnswerer?, allowInsecureHTTP: Bool = false,
        diagnostics: DeliveryDiagnostics? = nil
    ) async throws -> Messenger {
        try profile.prepare()
        let existing = try profile.keyStore.loadIdentity(passphrase: passphrase)
        var previous: AccountState?
        if let existing, FileManager.default.fileExists(atPath: profile.storeURL.path) {
            previous = try LocalStore.open(at: profile.storeURL, identity: existing).account()
        }
        if let previous, previous.email.lowercased() != email.lowercased() {
            throw ConfidantKitError.profileBelongsToOther(email: previous.email)
        }
        guard let serverURL = server ?? previous?.serverURL else {
            throw ConfidantKitError.invalidServerURL("(none given)")
        }
        // A new server address must not be plain HTTP across the network; a profile's own stays
        // as it was accepted.
        if let server { try ServerAddress.check(server, allowInsecureHTTP: allowInsecureHTTP) }
        let identity =
            if let existing, !newDeviceKey { existing } else {
                try PrivateIdentity.generate(deviceID: existing?.deviceID ?? UUID())
            }
        let session = try await signIn(serverURL, email: email, password: password, identity: identity, answer: answer)
        // The server now knows the new key; keep it before anything else can fail.
        let keyChanged = identity.publicIdentity != existing?.publicIdentity
        if keyChanged { try profile.keyStore.saveIdentity(identity, passphrase: passphrase) }
        let store: LocalStore
        if let existing, FileManager.default.fileExists(atPath: profile.storeURL.path) {
            store = try LocalStore.open(at: profile.storeURL, identity: existing, diagnostics: diagnostics)
            if keyChanged { try store.rewrap(for: identity) }
        } else {
            store = try LocalStore.open(at: profile.storeURL, identity: identity, diagnostics: diagnostics)
        }
        guard let userID = UUID(uuidString: session.user.id) else {
            throw ConfidantKitError.badResponse("the user id \(session.user.id) is not a UUID")
        }
        let account = AccountState(
            serverURL: serverURL, userID: userID, deviceID: identity.deviceID, email: session.user.email,
            displayName: session.user.displayName, token: session.token, tokenExpiresAt: session.expiresAt)
        try store.saveAccount(account)
        let messenger = Messenger(identity: identity, account: account, store: store, diagnostics: diagnostics)
        try await messenger.prekeys.publish(newDeviceKey: keyChanged)
        // The account's devices as of now: a device that signs in to it later is news to show
        // (best effort: the next key refresh records them too, without telling).
        _ = try? await messenger.devices()
        // A device unnamed so far takes its platform's name (best effort: Settings can name it).
        if let listed = try? await messenger.ownDevices(), listed.first(where: \.isThisDevice)?.name == nil {
            try? await messenger.renameDevice(identity.deviceID, to: OwnDevice.platformName)
        }
        return messenger
    }

    /// `POST /v1/sessions` with the password; when the account asks for more, the whole chain.
    private static func signIn(
        _ server: URL, email: String, password: String, identity: PrivateIdentity,
        answer: SignInAnswerer?
    ) async throws -> Components.Schemas.Session {
        let relay = RelayClient(serverURL: server, token: nil)
        let body = Components.Schemas.SignInRequest(
            email: email, password: password, identity: .init(identity.publicIdentity.serialized),
            proof: try await relay.deviceProof(email: email, identity: identity))
        switch try await relay.call({ try await $0.signIn(body: .json(body)) }) {
        case .created(let created):
            return try created.body.json
        case .default(let status, let response):
            let error = problem(status, response)
            guard error.serverCode == .stepUpRequired else { throw error }
            guard let answer else { throw ConfidantKitError.stepUpRequired }
            return try await relay.signInWithSteps(
                email: email, password: password, identity: identity, answer: answer)
        }
    }
}

extension Messenger {
    /// Opens a signed-in profile.
    public static func open(_ profile: ProfileStorage, passphrase: String) throws -> Messenger {
        try ProfileSignIn.open(profile, passphrase: passphrase)
    }

    /// Creates an account on `server` and signs this profile in to it.
    /// - Parameters:
    ///   - profile: where this device's key and local store live; an empty profile gets a new key.
    ///   - passphrase: protects the device key.
    ///   - server: the relay, e.g. `http://127.0.0.1:8080`.
    ///   - email: the account's e-mail address.
    ///   - password: the account password (at least 10 characters).
    ///   - displayName: what others see; "first last" when nil.
    ///   - firstName: as the seed's sign-up form asks.
    ///   - lastName: as the seed's sign-up form asks.
    ///   - answer: answers the sign-in steps: the code the server mails to `email` (which proves
    ///     the address is the user's; until then the account is out of the directory), and any
    ///     other the server asks. Without it, the account is created and `stepUpRequired` thrown.
    ///   - allowInsecureHTTP: accept `http://` to another machine; otherwise only loopback may
    ///     be plain HTTP (`insecureServerURL`).
    ///   - invite: the invite code of a server that takes new accounts by invite only.
    public static func register(
        _ profile: ProfileStorage, passphrase: String, server: URL, email: String, password: String,
        displayName: String? = nil, firstName: String? = nil, lastName: String? = nil,
        answer: SignInAnswerer? = nil, allowInsecureHTTP: Bool = false, invite: String? = nil
    ) async throws -> Messenger {
        let form = Components.Schemas.SignUpRequest(
            email: email, password: password, firstName: firstName, lastName: lastName,
            displayName: displayName, invite: invite)
        return try await ProfileSignIn.register(
            profile, passphrase: passphrase, server: server, form: form, answer: answer,
            allowInsecureHTTP: allowInsecureHTTP)
    }

    /// Signs the profile in, registering this device's key. The first sign-in creates the device
    /// key; `newDeviceKey` replaces it under the same device id (as reinstalling the app does), after
    /// which messages sealed for the old key cannot be read here.
    /// - Parameters:
    ///   - profile: where this device's key and local store live.
    ///   - passphrase: protects the device key.
    ///   - server: the relay; the profile's own server when nil.
    ///   - email: the account's e-mail address.
    ///   - password: the account password.
    ///   - newDeviceKey: replace this device's key.
    ///   - answer: answers the steps beyond the password when the account has a chain
    ///     (arithmetic, e-mail code, TOTP); without it such an account reports `stepUpRequired`.
    ///   - allowInsecureHTTP: accept a new `http://` server on another machine.
    public static func login(
        _ profile: ProfileStorage, passphrase: String, server: URL? = nil, email: String, password: String,
        newDeviceKey: Bool = false, answer: SignInAnswerer? = nil, allowInsecureHTTP: Bool = false
    ) async throws -> Messenger {
        try await ProfileSignIn.login(
            profile, passphrase: passphrase, server: server, email: email, password: password,
            newDeviceKey: newDeviceKey, answer: answer, allowInsecureHTTP: allowInsecureHTTP)
    }

    /// How this account signs in.
    public func signInSettings() async throws -> SignInSettings {
        switch try await relay.call({ try await $0.getAuthSettings() }) {
        case .ok(let ok): return SignInSettings(try ok.body.json)
        case .default(let status, let response): throw problem(status, response)
        }
    }

    /// Changes how this account signs in; needs the current password.
    public func updateSignInSettings(_ change: SignInSettingsChange, password: String) async throws -> SignInSettings {
        let body = Components.Schemas.AuthSettingsUpdate(
            password: password, chain: change.chain.map(\.wire), operands: change.operands,
            mapping: change.mapping, codeLength: change.codeLength,
            totpSecret: change.totpSecret, totpCode: change.totpCode)
        switch try await relay.call({ try await $0.updateAuthSettings(body: .json(body)) }) {
        case .ok(let ok): return SignInSettings(try ok.body.json)
        case .default(let status, let response): throw problem(status, response)
        }
    }
}
