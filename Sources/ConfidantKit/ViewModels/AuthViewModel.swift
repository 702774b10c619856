import ConfidantAuth
import Foundation
import Observation

/// Sign up / sign in, as the seed's first screen: fields, per-field errors, a busy flag, and the
/// signed-in ``Messenger`` when it worked.
@MainActor @Observable
public final class AuthViewModel {
    /// Signing in to an account, or creating one.
    public enum Mode: Sendable { case signIn, signUp }
    /// The form's fields, for per-field errors.
    public enum Field: Hashable, Sendable { case server, email, password, firstName, lastName, displayName, invite }

    /// Sign in or sign up.
    public var mode: Mode = .signIn
    /// The server, as typed (`https://relay.example`, or `http://127.0.0.1:8080` on this machine).
    public var serverAddress = ""
    /// Accept `http://` to another machine (a settings switch, off by default).
    public var allowInsecureHTTP = false
    /// The e-mail, as typed.
    public var email = ""
    /// The password; cleared after a successful submit.
    public var password = ""
    /// First name (sign-up).
    public var firstName = ""
    /// Last name (sign-up).
    public var lastName = ""
    /// Optional on sign-up: "first last" when empty.
    public var displayName = ""
    /// Sign-up on a server that takes new accounts by invite only: the code its operator gave.
    public var invite = ""
    /// What is wrong with each field, from local checks or the server.
    public private(set) var fieldErrors: [Field: String] = [:]
    /// A problem that belongs to no field (wrong credentials, the server down).
    public private(set) var generalError: String?
    /// A submit is under way.
    public private(set) var isWorking = false
    /// The signed-in profile, once it worked.
    public private(set) var messenger: Messenger?
    /// A sign-in step waiting for the user (arithmetic, e-mail code, TOTP); answer it with
    /// `answerStep`. Its `problem` says why it is asked again (a wrong answer).
    public private(set) var pendingStep: SignInStep?
    /// The answer to the pending step, as typed.
    public var stepAnswer = ""
    private var stepContinuation: CheckedContinuation<String, any Error>?

    private let profile: ProfileStorage
    private let passphrase: String

    /// - Parameters:
    ///   - profile: where the device key and local store live.
    ///   - passphrase: protects the device key (an app would take it from the Keychain).
    public init(profile: ProfileStorage, passphrase: String) {
        self.profile = profile
        self.passphrase = passphrase
    }

    /// Checks the fields locally; the server checks them again.
    public func validate() -> Bool {
        var errors: [Field: String] = [:]
        do {
            _ = try ServerAddress.parse(serverAddress, allowInsecureHTTP: allowInsecureHTTP)
        } catch ConfidantKitError.insecureServerURL {
            errors[.server] = "Use https:// for a server on another machine"
        } catch {
            errors[.server] = "Enter the server address, e.g. https://relay.example or http://127.0.0.1:8080"
        }
        do {
            _ = try EmailAddress(email)
        } catch {
            errors[.email] = "Enter a valid e-mail address (\(error.description))"
        }
        if password.isEmpty {
            errors[.password] = "Enter your password"
        } else if mode == .signUp, password.count < 10 {
            errors[.password] = "Use at least 10 characters"
        }
        if mode == .signUp {
            if firstName.trimmingCharacters(in: .whitespaces).isEmpty { errors[.firstName] = "Enter your first name" }
            if lastName.trimmingCharacters(in: .whitespaces).isEmpty { errors[.lastName] = "Enter your last name" }
        }
        fieldErrors = errors
        return errors.isEmpty
    }

    /// Checks the fields, then signs up or in; steps beyond the password come as `pendingStep`.
    public func submit() async {
        generalError = nil
        // An invite link pasted as the server: its server, and its code unless one is typed.
        if let link = InviteLink(serverAddress) {
            serverAddress = link.server
            if invite.trimmingCharacters(in: .whitespaces).isEmpty { invite = link.code }
        }
        guard validate(), let server = try? ServerAddress.parse(serverAddress, allowInsecureHTTP: allowInsecureHTTP)
        else { return }
        isWorking = true
        defer { isWorking = false }
        do {
            let answer: SignInAnswerer = { [weak self] step in
                guard let self else { throw CancellationError() }
                return try await self.ask(step)
            }
            switch mode {
            case .signUp:
                // The server mails a code to prove the address: it comes as `pendingStep`.
                let shown = displayName.trimmingCharacters(in: .whitespaces)
                let typedInvite = invite.trimmingCharacters(in: .whitespaces)
                let shownInvite = typedInvite.isEmpty ? nil : typedInvite
                messenger = try await Messenger.register(
                    profile, passphrase: passphrase, server: server, email: email, password: password,
                    displayName: shown.isEmpty ? nil : shown,
                    firstName: firstName.trimmingCharacters(in: .whitespaces),
                    lastName: lastName.trimmingCharacters(in: .whitespaces), answer: answer,
                    allowInsecureHTTP: allowInsecureHTTP, invite: shownInvite)
            case .signIn:
                messenger = try await Messenger.login(
                    profile, passphrase: passphrase, server: server, email: email, password: password,
                    answer: answer, allowInsecureHTTP: allowInsecureHTTP)
            }
            password = ""
        } catch let error as ConfidantKitError {
            switch error.serverCode {
            case .emailTaken?, .invalidEmail?: fieldErrors[.email] = Self.message(error)
            case .weakPassword?: fieldErrors[.password] = Self.message(error)
            case .invalidDisplayName?: fieldErrors[.displayName] = Self.message(error)
            case .invalidName?: fieldErrors[.firstName] = Self.message(error)
            case .inviteRequired?, .inviteInvalid?: fieldErrors[.invite] = Self.message(error)
            case .registrationClosed?: generalError = Self.message(error)
            case .invalidCredentials?: generalError = "Wrong e-mail or password"
            default: generalError = Self.message(error)
            }
        } catch {
            generalError = String(describing: error)
        }
    }

    private func ask(_ step: SignInStep) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            stepContinuation = continuation
            stepAnswer = ""
            pendingStep = step
        }
    }

    /// Sends `stepAnswer` for the pending step; a wrong answer brings the step back (a new challenge).
    public func answerStep() {
        let continuation = stepContinuation
        stepContinuation = nil
        pendingStep = nil
        continuation?.resume(returning: stepAnswer.trimmingCharacters(in: .whitespaces))
    }

    /// Asks the server to mail the pending e-mail code step's code again; the step comes back
    /// with a notice, or with the server's reason to wait (one code a minute).
    public func resendCode() {
        guard pendingStep?.method == .emailCode else { return }
        let continuation = stepContinuation
        stepContinuation = nil
        pendingStep = nil
        continuation?.resume(throwing: SignInCodeResendRequest())
    }

    /// Abandons the sign-in at the pending step.
    public func cancelStep() {
        let continuation = stepContinuation
        stepContinuation = nil
        pendingStep = nil
        continuation?.resume(throwing: CancellationError())
    }

    private static func message(_ error: ConfidantKitError) -> String {
        if case .server(_, _, let message) = error { return message }
        return error.description
    }
}
