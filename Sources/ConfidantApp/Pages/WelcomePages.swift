import ConfidantCrypto
import ConfidantKit
import Foundation
import Vapor

/// `/`, the unlock page, sign-up and sign-in with every step the account asks, and sign-out:
/// renderings of `AuthViewModel` and the session's stage.
struct WelcomePages {
    let context: AppContext

    func register(on routes: any RoutesBuilder) {
        routes.get(.home) { request in try await root(request) }
        routes.get(.unlock) { request in try await unlockPage(request) }
        routes.post(.unlock) { request in try await unlock(request) }
        routes.get(.welcome) { request in try await welcomePage(request) }
        routes.post(.welcome, maximumBody: AvatarUpload.maximumRequestBytes) { request in try await submit(request) }
        routes.post(.welcomeStep) { request in try await answer(request) }
        routes.get(.welcomeAvatar) { request in try await keptAvatar(request) }
        routes.post(.welcomeResend) { request in
            await context.session.resendCode()
            return request.redirect(to: .welcome)
        }
        routes.post(.welcomeCancel) { request in
            await context.session.cancelAuth()
            return request.redirect(to: .welcome)
        }
        routes.post(.signOut) { request in try await signOut(request) }
    }

    private func root(_ request: Request) async throws -> Response {
        switch await context.session.stage {
        case .locked: request.redirect(to: .unlock)
        case .signedOut: request.redirect(to: .welcome)
        case .signedIn: request.redirect(to: .conversations)
        }
    }

    // MARK: Unlock

    struct UnlockPage: Encodable, Sendable {
        let page: PageInfo
        let profileName: String
    }

    private func unlockPage(_ request: Request, error: String? = nil) async throws -> Response {
        let page = await UnlockPage(
            page: context.info("Unlock", error: error), profileName: context.session.configuration.profileName)
        return try await request.page("unlock", page, status: error == nil ? .ok : .unauthorized)
    }

    private struct UnlockForm: Content {
        var passphrase: String
    }

    private func unlock(_ request: Request) async throws -> Response {
        let form = try request.content.decode(UnlockForm.self)
        do {
            try await context.session.unlock(passphrase: form.passphrase)
        } catch let error as IdentityKeyFileError {
            if case .wrongPassphraseOrCorrupted = error {
                return try await unlockPage(request, error: "Wrong passphrase. Try again.")
            }
            return try await unlockPage(request, error: error.description)
        }
        return request.redirect(to: .home)
    }

    // MARK: Sign-up and sign-in

    struct StepView: Encodable, Sendable {
        /// "Step 2 of 2: confirm your e-mail" (a sign-in's total stays the server's secret).
        let title: String
        let number: Int
        let prompt: String
        let challenge: String?
        let label: String
        let inputMode: String
        let problem: String?
        let notice: String?
        /// An e-mail code step: a new code can be asked for.
        let canResend: Bool
        /// Seconds until the server mails another code (0: now).
        let resendIn: Int
    }

    struct FieldErrors: Encodable, Sendable {
        var server: String?
        var email: String?
        var password: String?
        var firstName: String?
        var lastName: String?
        var displayName: String?
        var invite: String?
        var passphrase: String?
        var avatar: String?
    }

    struct WelcomePage: Encodable, Sendable {
        let page: PageInfo
        let mode: String
        let signIn: Bool
        let signUp: Bool
        let server: String
        let email: String
        let firstName: String
        let lastName: String
        let displayName: String
        let invite: String
        let passwordAutocomplete: String
        let needsPassphrase: Bool
        let keepsPassphrase: Bool
        /// The picture chosen before the form came back with a problem; nil when none.
        let keptAvatar: String?
        let errors: FieldErrors
        let generalError: String?
        let step: StepView?
    }

    /// - Parameter submitted: the form that came back with a problem before it was submitted (its
    ///   fields are shown again as typed).
    private func welcomePage(
        _ request: Request, mode requested: String? = nil, passphraseError: String? = nil,
        avatarError: String? = nil, submitted: WelcomeForm? = nil, status: HTTPStatus = .ok
    ) async throws -> Response {
        let session = context.session
        if await session.stage == .signedIn { return request.redirect(to: await session.landing()) }
        if await session.stage == .locked { return request.redirect(to: .unlock) }
        let page = await MainActor.run { () -> WelcomePage in
            let auth = session.auth
            let signUp: Bool
            if let requested = requested ?? (try? request.query.get(String.self, at: "mode")) {
                signUp = requested == "sign-up"
            } else {
                signUp = auth?.mode == .signUp
            }
            let errors = auth?.fieldErrors ?? [:]
            return WelcomePage(
                page: context.info(signUp ? "Create an account" : "Sign in"),
                mode: signUp ? "sign-up" : "sign-in", signIn: !signUp, signUp: signUp,
                server: submitted?.server ?? auth?.serverAddress ?? session.lastAccount?.server
                    ?? session.configuration.defaultServer,
                email: submitted?.email ?? auth?.email ?? (signUp ? "" : session.lastAccount?.email ?? ""),
                firstName: submitted?.firstName ?? auth?.firstName ?? "",
                lastName: submitted?.lastName ?? auth?.lastName ?? "",
                displayName: submitted?.displayName ?? auth?.displayName ?? "",
                invite: submitted?.invite ?? auth?.invite ?? "",
                passwordAutocomplete: signUp ? "new-password" : "current-password",
                needsPassphrase: session.needsNewPassphrase, keepsPassphrase: session.keepsNewPassphrase,
                keptAvatar: signUp && session.pendingAvatar != nil ? AppRoute.welcomeAvatar.path : nil,
                errors: FieldErrors(
                    server: errors[.server], email: errors[.email], password: errors[.password],
                    firstName: errors[.firstName], lastName: errors[.lastName], displayName: errors[.displayName],
                    invite: errors[.invite], passphrase: passphraseError, avatar: avatarError),
                generalError: auth?.generalError,
                step: auth?.pendingStep.map { Self.view($0, signUp: auth?.mode == .signUp) })
        }
        return try await request.page("welcome", page, status: status)
    }

    static func view(_ step: SignInStep, signUp: Bool) -> StepView {
        let (label, inputMode): (String, String) =
            switch step.method {
            case .arithmetic: ("Your answer", "numeric")
            case .totp: ("Code from your authenticator app", "numeric")
            case .emailCode: ("Code from the e-mail", "text")
            case .password, .biometric: ("Answer", "text")
            }
        let resendIn = step.resendAvailableAt.map { max(0, Int($0.timeIntervalSinceNow.rounded(.up))) } ?? 0
        let goal =
            switch step.method {
            case .arithmetic: "solve the challenge"
            case .totp: "your authenticator app"
            case .emailCode: "confirm your e-mail"
            case .password: "your password"
            case .biometric: "biometrics"
            }
        // A sign-up is always the password, then the mailed code.
        let position = signUp ? "Step \(step.number) of 2" : "Step \(step.number)"
        return StepView(
            title: "\(position): \(goal)", number: step.number, prompt: step.prompt, challenge: step.challenge,
            label: label, inputMode: inputMode,
            problem: step.problem, notice: step.notice, canResend: step.method == .emailCode, resendIn: resendIn)
    }

    private struct WelcomeForm: Content {
        var mode: String
        var server: String
        var email: String
        var password: String
        var firstName: String?
        var lastName: String?
        var displayName: String?
        var invite: String?
        var passphrase: String?
        var passphraseAgain: String?
        var avatar: File?
    }

    private func submit(_ request: Request) async throws -> Response {
        let form = try request.content.decode(WelcomeForm.self)
        let session = context.session
        let newPassphrase = form.passphrase ?? ""
        var avatar: Avatar?
        if let file = form.avatar, file.data.readableBytes > 0 {
            do {
                let chosen = try Avatar(Data(buffer: file.data))
                await session.keepAvatar(chosen)
                avatar = chosen
            } catch {
                return try await welcomePage(
                    request, mode: form.mode, avatarError: "Choose a PNG or JPEG picture of up to 1 MB.",
                    submitted: form, status: .unprocessableEntity)
            }
        } else if form.mode == "sign-up" {
            // The picture of the attempt before, which came back with a problem.
            avatar = await session.pendingAvatar
        }
        if await session.needsNewPassphrase, newPassphrase.count < 8 {
            _ = await session.newAuth(passphrase: nil)
            return try await welcomePage(
                request, mode: form.mode,
                passphraseError: "Choose a passphrase of at least 8 characters; it protects this device's key.",
                submitted: form, status: .unprocessableEntity)
        }
        if await session.needsNewPassphrase, newPassphrase != form.passphraseAgain {
            _ = await session.newAuth(passphrase: nil)
            return try await welcomePage(
                request, mode: form.mode,
                passphraseError: "The two passphrases differ. Type the same one twice: it cannot be recovered.",
                submitted: form, status: .unprocessableEntity)
        }
        let accepted = await MainActor.run { () -> Bool in
            guard let auth = session.newAuth(passphrase: newPassphrase) else { return false }
            auth.mode = form.mode == "sign-up" ? .signUp : .signIn
            auth.serverAddress = form.server.trimmingCharacters(in: .whitespaces)
            auth.email = form.email.trimmingCharacters(in: .whitespaces)
            auth.password = form.password
            auth.firstName = form.firstName ?? ""
            auth.lastName = form.lastName ?? ""
            auth.displayName = form.displayName ?? ""
            auth.invite = String((form.invite ?? "").prefix(64))
            return true
        }
        guard accepted else { return request.redirect(to: .unlock) }
        await session.submitAuth(newPassphrase: newPassphrase, avatar: avatar)
        return request.redirect(to: .welcome)
    }

    /// The picture a sign-up form chose, shown again while the form is.
    private func keptAvatar(_ request: Request) async throws -> Response {
        guard let avatar = await context.session.pendingAvatar else {
            throw Abort(.notFound, reason: "No picture is waiting for a sign-up.")
        }
        var headers = HTTPHeaders()
        headers.replaceOrAdd(name: .contentType, value: avatar.contentType)
        return Response(status: .ok, headers: headers, body: .init(data: avatar.data))
    }

    private struct StepForm: Content {
        var answer: String
    }

    private func answer(_ request: Request) async throws -> Response {
        let form = try request.content.decode(StepForm.self)
        guard form.answer.count <= 64 else { throw Abort(.badRequest, reason: "That answer is too long.") }
        await context.session.answerStep(form.answer)
        return request.redirect(to: .welcome)
    }

    private func signOut(_ request: Request) async throws -> Response {
        if let problem = await context.session.signOut() {
            throw Abort(.badGateway, reason: "Not signed out: \(problem)")
        }
        return request.redirect(to: .welcome)
    }
}
