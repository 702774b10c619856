import ArgumentParser
import ConfidantCrypto
import ConfidantKit
import Foundation

/// `confidant account register`: creates an account and signs this profile in.
struct RegisterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Create an account on a Confidant server and sign this profile in.",
        discussion: """
            Creates the profile's device key (protected by the profile passphrase) and registers it. The server \
            mails a code to the address, which it asks for next: until it is entered, the account is not in the \
            directory and cannot receive messages. Use a different --profile for each account on one machine.
            """)

    @OptionGroup var options: MessengerOptions
    @Option(name: .long, help: "The server, e.g. http://127.0.0.1:8080, or an invite link (…/join?code=…).")
    var server: String
    @Option(name: .long, help: "Your e-mail address.") var email: String
    @Option(name: .long, help: "Your first name.") var firstName: String?
    @Option(name: .long, help: "Your last name.") var lastName: String?
    @Option(name: .long, help: "The name others see (default: first and last name).") var name: String?
    @Option(name: .long, help: "A profile picture (PNG or JPEG, up to 1 MB); everyone on the server can see it.")
    var avatar: String?
    @Option(
        name: .long,
        help: "The invite code the server's operator gave you (a server that takes sign-ups by invite), or the link.")
    var invite: String?
    @OptionGroup var password: PasswordOptions
    @Flag(
        name: .long,
        help: "Accept an http:// server on another machine (passwords and tokens then cross the network unencrypted)."
    )
    var insecureHttp = false

    func validate() throws {
        guard name != nil || (firstName != nil && lastName != nil) else {
            throw ValidationError("give --first-name and --last-name (and optionally --name, what others see)")
        }
    }

    func run() async throws {
        let link = InviteLink(server) ?? invite.flatMap(InviteLink.init)
        let server = InviteLink(server)?.server ?? server
        let invite = invite.map { InviteLink($0)?.code ?? $0 } ?? link?.code
        let serverURL = try ServerAddress.parse(server, allowInsecureHTTP: insecureHttp)
        // The picture is checked before the account exists: a wrong file stops nothing half-done.
        let picture = try avatar.map { try Avatar(try FileIO.read($0)) }
        let accountPassword = try password.password()
        let messenger = try await Messenger.register(
            try options.storage(), passphrase: options.profilePassphrase(confirmIfNew: true),
            server: serverURL, email: email, password: accountPassword, displayName: name,
            firstName: firstName, lastName: lastName, answer: SignInPrompts.answerer, allowInsecureHTTP: insecureHttp,
            invite: invite)
        if let picture { try await messenger.setAvatar(picture) }
        let account = await messenger.account
        print(
            "registered \(account.email) as \(account.displayName) on \(account.serverURL.absoluteString) (profile \(options.profile.profile))"
        )
        // Thesis 003, fig. 3.5: the protection is chosen right after sign-up (or skipped).
        print(
            "next, choose how you sign in: \(options.profile.suggestion("auth setup")) (or keep the password alone; a new device also needs an e-mailed code)"
        )
    }
}

/// `confidant account login`: signs the profile in (again).
struct LoginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Sign this profile in to an existing account, answering every step the account asks for.",
        discussion: """
            An account with a chain (`confidant auth setup`) is asked each step in turn: the arithmetic \
            challenge, the e-mail code, the authenticator code. \
            On a new profile this creates a device key: peers get a key-change warning, and messages sent \
            before it reach only your other devices. --new-device-key replaces this profile's key (as \
            reinstalling the app does): messages sealed for the old key become unreadable here.
            """)

    @OptionGroup var options: MessengerOptions
    @Option(name: .long, help: "The server (default: the profile's).") var server: String?
    @Option(name: .long, help: "Your e-mail address.") var email: String
    @Flag(name: .long, help: "Replace this device's key with a new one.") var newDeviceKey = false
    @OptionGroup var password: PasswordOptions
    @Flag(
        name: .long,
        help: "Accept an http:// server on another machine (passwords and tokens then cross the network unencrypted)."
    )
    var insecureHttp = false

    func run() async throws {
        let serverURL = try server.map { try ServerAddress.parse($0, allowInsecureHTTP: insecureHttp) }
        let accountPassword = try password.password()
        let messenger = try await Messenger.login(
            try options.storage(), passphrase: options.profilePassphrase(confirmIfNew: true),
            server: serverURL, email: email, password: accountPassword, newDeviceKey: newDeviceKey,
            answer: SignInPrompts.answerer, allowInsecureHTTP: insecureHttp)
        let account = await messenger.account
        let fingerprint = IdentityFingerprint(messenger.identity.publicIdentity)
        print("signed in as \(account.email) on \(account.serverURL.absoluteString); this device's key: \(fingerprint)")
    }
}

/// `confidant account logout`.
struct LogoutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout", abstract: "Sign this profile out (the device key and history stay).")

    @OptionGroup var options: MessengerOptions

    func run() async throws {
        let messenger = try options.open()
        try await messenger.logout()
        print("signed out")
    }
}

/// `confidant account whoami`.
struct WhoAmICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "whoami", abstract: "Show the profile's account, server and device key.")

    @OptionGroup var options: MessengerOptions
    @OptionGroup var output: OutputOptions

    struct Report: Encodable {
        let profile: String, email: String, name: String, server: String, userId: String, deviceId: String,
            fingerprint: String
        let sessionExpiresAt: Date?
    }

    func run() async throws {
        let messenger = try options.open()
        let account = await messenger.account
        let report = Report(
            profile: options.profile.profile, email: account.email, name: account.displayName,
            server: account.serverURL.absoluteString, userId: account.userID.canonicalString,
            deviceId: account.deviceID.canonicalString,
            fingerprint: IdentityFingerprint(messenger.identity.publicIdentity).description,
            sessionExpiresAt: account.tokenExpiresAt)
        if output.json { return try JSONOutput.print(report) }
        print(
            TerminalStyle.pairs([
                ("profile", report.profile), ("account", "\(report.name) <\(report.email)>"), ("server", report.server),
                ("device", report.deviceId), ("key", report.fingerprint),
            ]))
    }
}

/// `confidant account devices`.
struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices", abstract: "List this account's devices, name one, or remove a lost one.",
        discussion: """
            Each device shows its name, when it was last active (to within 5 minutes) and its key.             --name NAME names this device (or the one --device picks); the name is stored on the server             and shown only to you. --remove DEVICE signs that device out for good: its sessions end, a             chat it has open is disconnected, its undelivered messages are dropped, and your contacts             see its key retired. Messages it sends afterwards are refused by the server and by your             contacts' devices.
            """)

    @OptionGroup var options: MessengerOptions
    @OptionGroup var output: OutputOptions
    @Option(name: .long, help: "Remove this device (its id, from the list).") var remove: String?
    @Option(name: .long, help: "Name a device: 1 to 40 characters.") var name: String?
    @Option(name: .long, help: "The device --name names (its id; this device when left out).") var device: String?

    struct Device: Encodable {
        let deviceId: String, name: String?, lastSeenAt: Date?, fingerprint: String?, thisDevice: Bool
    }

    func validate() throws {
        if device != nil, name == nil { throw ValidationError("--device picks the device that --name names.") }
    }

    func run() async throws {
        let messenger = try options.open()
        if let remove {
            try await messenger.removeDevice(try deviceID(remove))
            if !output.json { print("removed device \(remove)") }
        }
        if let name {
            let target = try device.map(deviceID) ?? messenger.identity.deviceID
            try await messenger.renameDevice(target, to: name)
            if !output.json { print("named device \(target.canonicalString.prefix(8)) \"\(name)\"") }
        }
        let keys = try await messenger.devices()
        let devices = try await messenger.ownDevices().map { device in
            Device(
                deviceId: device.id.canonicalString, name: device.name, lastSeenAt: device.lastSeenAt,
                fingerprint: keys.first { $0.deviceID == device.id }.map { IdentityFingerprint($0).description },
                thisDevice: device.isThisDevice)
        }
        if output.json { return try JSONOutput.print(devices) }
        print(
            TerminalStyle.table(
                ["DEVICE", "NAME", "LAST ACTIVE", "KEY", ""],
                devices.map {
                    [
                        $0.deviceId, $0.name ?? "", $0.lastSeenAt.map { $0.formatted(.iso8601) } ?? "never",
                        $0.fingerprint ?? "", $0.thisDevice ? "(this device)" : "",
                    ]
                }))
    }

    private func deviceID(_ text: String) throws -> UUID {
        guard let id = UUID(uuidString: text) else {
            throw ValidationError(
                "\(text) is not a device id; \(options.profile.suggestion("account devices")) lists them.")
        }
        return id
    }
}
