import ArgumentParser
import ConfidantAuth
import ConfidantKit
import Foundation

/// `confidant auth setup`: chooses how the profile's account signs in.
struct AuthSetupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "setup",
        abstract: "Choose how this account signs in: an ordered chain of password, arithmetic, email-code and totp.",
        discussion: """
            Example: confidant auth setup --methods password,arithmetic,totp --operands 4 --map '+=*,-=/,*=+,/=-'

            The mapping says which operation each sign stands for (any of the 256 mappings); challenges are \
            evaluated left to right without precedence. For totp a new secret is generated (or --totp-secret \
            given), shown as an otpauth:// URI (and as a QR code on a terminal), and confirmed with a \
            current code. Biometrics belong to a device and are not available here. A new device or network \
            address always adds the e-mail code.
            """)

    @OptionGroup var options: MessengerOptions
    @Option(
        name: .long,
        help:
            "The chain, in order, including password, e.g. password,arithmetic,totp (asked for on a terminal when missing)."
    )
    var methods: String?
    @Option(name: .long, help: "Operands per arithmetic challenge (2…8).") var operands: Int?
    @Option(name: .long, help: "Your operator mapping, e.g. '+=*,-=/,*=+,/=-'.") var map: String?
    @Option(name: .long, help: "Length of e-mail codes (4…8).") var codeLength: Int?
    @Option(name: .long, help: "Use this base32 TOTP secret instead of a new one (scripts).") var totpSecret: String?
    @Option(name: .long, help: "A current code for the TOTP secret (otherwise asked for).") var totpCode: String?
    @OptionGroup var password: PasswordOptions

    func run() async throws {
        let interactive = methods == nil
        guard
            let methods = try methods
                ?? (Terminal.stdinIsTTY
                    ? Self.ask(
                        "Sign in with which methods, in order? (password, arithmetic, email-code, totp; e.g. password,totp): "
                    ) : nil)
        else {
            throw ValidationError("give --methods, e.g. --methods password,arithmetic,totp")
        }
        var operands = self.operands
        var map = self.map
        var codeLength = self.codeLength
        let chain = try methods.split(separator: ",").map { name -> SignInStep.Method in
            let trimmed = name.trimmingCharacters(in: .whitespaces)
            guard let method = SignInStep.Method(rawValue: trimmed) else {
                throw ValidationError("unknown method \(trimmed); choose from password, arithmetic, email-code, totp")
            }
            if method == .biometric {
                throw ValidationError(
                    "biometrics belong to a device (Face ID / Touch ID); they are not available in this CLI")
            }
            return method
        }
        if interactive, chain.contains(.arithmetic) {
            print("Arithmetic challenge: choose what each sign means to you (any of + - * / for each).")
            map = try map ?? Self.ask("Your mapping, e.g. +=*,-=/,*=+,/=- : ")
            operands = try operands ?? Int(Self.ask("How many operands per challenge (2-8)? "))
        }
        if interactive, chain.contains(.emailCode) {
            codeLength = try codeLength ?? Int(Self.ask("E-mail code length (4-8)? "))
        }
        let accountPassword = try password.password()
        let messenger = try options.open()
        var change = SignInSettingsChange(chain: chain, operands: operands, mapping: map, codeLength: codeLength)
        if chain.contains(.totp), !(try await messenger.signInSettings().totpEnrolled) || totpSecret != nil {
            let secret = try totpSecret.map { try Base32.decode($0) } ?? TOTP.generateSecret()
            let account = await messenger.account.email
            let uri = TOTP(secret: secret).provisioningURI(account: account)
            print("Add this to your authenticator app:\n  \(uri)")
            Self.printQRCode(uri)
            change.totpSecret = Base32.encode(secret)
            change.totpCode = try totpCode ?? Self.ask("Current code from the authenticator: ")
        }
        let settings = try await messenger.updateSignInSettings(change, password: accountPassword)
        print(
            "signing in now takes: \(settings.chain.map(\.rawValue).joined(separator: " → ")) (a new device or address adds email-code)"
        )
    }

    static func ask(_ prompt: String) throws -> String {
        FileHandle.standardOutput.write(Data(prompt.utf8))
        guard let line = readLine(), !line.isEmpty else { throw CLIError.invalidArgument("no answer given") }
        return line.trimmingCharacters(in: .whitespaces)
    }

    /// The URI as a QR code on a terminal (ConfidantKit's encoder; scanned from the screen).
    static func printQRCode(_ text: String) {
        guard Terminal.stdoutIsTTY, let code = try? QRCode(text: text, correction: .low) else { return }
        print(code.terminalLines.joined(separator: "\n"))
    }
}

/// `confidant auth show`.
struct AuthShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show how this account signs in.")

    @OptionGroup var options: MessengerOptions
    @OptionGroup var output: OutputOptions

    struct Report: Encodable {
        let chain: [String], operands: Int, codeLength: Int, arithmeticConfigured: Bool, totpEnrolled: Bool
    }

    func run() async throws {
        let settings = try await options.open().signInSettings()
        let report = Report(
            chain: settings.chain.map(\.rawValue), operands: settings.operands, codeLength: settings.codeLength,
            arithmeticConfigured: settings.arithmeticConfigured, totpEnrolled: settings.totpEnrolled)
        if output.json { return try JSONOutput.print(report) }
        print(
            TerminalStyle.pairs([
                ("chain", report.chain.joined(separator: " → ")),
                ("step-up", "a new device or network address adds email-code"),
                ("arithmetic", report.arithmeticConfigured ? "\(report.operands) operands, mapping set" : "not set up"),
                ("e-mail code", "\(report.codeLength) characters"),
                ("totp", report.totpEnrolled ? "enrolled" : "not enrolled"),
                ("biometrics", "not available in the CLI (a device method)"),
            ]))
    }
}

/// Asks each sign-in step at the terminal (or reads the answers, one per line, from standard input).
enum SignInPrompts {
    static let answerer: SignInAnswerer = { step in
        if step.method == .biometric {
            throw CLIError.invalidArgument(
                "this account asks for biometrics, which belong to a device; sign in from the app")
        }
        if let problem = step.problem { Terminal.printError(problem) }
        if let notice = step.notice { Terminal.printError(notice) }
        let hint = step.method == .emailCode ? " (or 'resend' for a new code)" : ""
        let answer = try AuthSetupCommand.ask("[step \(step.number)] \(step.prompt)\(hint): ")
        if step.method == .emailCode, answer.lowercased() == "resend" { throw SignInCodeResendRequest() }
        return answer
    }
}
