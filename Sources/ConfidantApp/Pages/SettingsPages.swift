import ConfidantAuth
import ConfidantKit
import Foundation
import Vapor

/// Settings: the sign-in chain (methods in order, the operator mapping, operand count, code
/// length, an authenticator app confirmed by a current code), devices, deleting the account —
/// renderings of `SettingsViewModel`.
struct SettingsPages {
    let context: AppContext

    func register(on routes: any RoutesBuilder) {
        routes.get(.settings) { request in try await settings(request) }
        routes.post(.settingsSignIn) { request in try await updateSignIn(request) }
        routes.post(.settingsTOTP) { request in
            guard let model = await context.session.settings else { return request.redirect(to: .home) }
            await model.beginTOTPEnrolment()
            return request.redirect(to: .settings)
        }
        routes.get(.settingsTOTPCode) { request in try await totpCode(request) }
        routes.post(.removeDevice(.key)) { request in try await removeDevice(request) }
        routes.post(.renameDevice(.key)) { request in try await renameDevice(request) }
        routes.post(.settingsReceipts) { request in try await setReceipts(request) }
        routes.post(.deleteAccount) { request in try await deleteAccount(request) }
    }

    struct Option: Encodable, Sendable {
        let value: String
        let label: String
        let selected: Bool
    }

    struct Step: Encodable, Sendable {
        let position: Int
        let options: [Option]
    }

    struct Sign: Encodable, Sendable {
        let name: String
        let symbol: String
    }

    struct Enrolment: Encodable, Sendable {
        let secret: String
    }

    struct SettingsPage: Encodable, Sendable {
        let page: PageInfo
        let notice: String?
        let steps: [Step]
        let signs: [Sign]
        let arithmeticConfigured: Bool
        let operands: Int
        let codeLength: Int
        let totpEnrolled: Bool
        let enrolment: Enrolment?
        let devices: [DeviceView]
        let sendsReadReceipts: Bool
        let receipts = AppRoute.settingsReceipts.path
    }

    static let methods: [(SignInMethod?, String)] = [
        (nil, "none"), (.arithmetic, SignInMethod.arithmetic.displayName),
        (.emailCode, SignInMethod.emailCode.displayName), (.totp, SignInMethod.totp.displayName),
    ]
    static let signs = [("plus", "+"), ("minus", "−"), ("times", "×"), ("divide", "÷")]

    private func settings(_ request: Request) async throws -> Response {
        guard let model = await context.session.settings else { return request.redirect(to: .home) }
        let flash = await context.session.takeFlash()
        await model.load()
        let timeline = ChatTimeline(calendar: .current, now: Date())
        let page = await MainActor.run { () -> SettingsPage in
            let chain = model.signIn?.chain ?? [.password]
            let steps = (2...4).map { position in
                let current = position - 1 < chain.count ? chain[position - 1] : nil
                return Step(
                    position: position,
                    options: Self.methods.map { method, label in
                        Option(value: method?.rawValue ?? "", label: label, selected: method == current)
                    })
            }
            return SettingsPage(
                page: context.info("Settings", error: flash?.error ?? model.error), notice: flash?.notice, steps: steps,
                signs: Self.signs.map { Sign(name: $0.0, symbol: $0.1) },
                arithmeticConfigured: model.signIn?.arithmeticConfigured ?? false,
                operands: model.signIn?.operands ?? 3, codeLength: model.signIn?.codeLength ?? 6,
                totpEnrolled: model.signIn?.totpEnrolled ?? false,
                enrolment: model.enrolment.map { Enrolment(secret: $0.secret) },
                devices: model.devices.map { DeviceView($0, timeline: timeline) },
                sendsReadReceipts: model.sendsReadReceipts)
        }
        return try await request.page("settings", page)
    }

    /// Back to the settings page, which shows once what the model said (post/redirect/get).
    private func settingsAgain(_ request: Request, _ model: SettingsViewModel) async -> Response {
        await MainActor.run { context.session.flash = (model.error, model.notice) }
        return request.redirect(to: .settings)
    }

    private struct SignInForm: Content {
        var step2: String?
        var step3: String?
        var step4: String?
        var map_plus: String?
        var map_minus: String?
        var map_times: String?
        var map_divide: String?
        var operands: Int?
        var codeLength: Int?
        var totpCode: String?
        var password: String
    }

    private func updateSignIn(_ request: Request) async throws -> Response {
        guard let model = await context.session.settings else { return request.redirect(to: .home) }
        let form = try request.content.decode(SignInForm.self)
        var chain: [SignInMethod] = [.password]
        for name in [form.step2, form.step3, form.step4] {
            guard let name, !name.isEmpty else { continue }
            guard let method = SignInMethod(rawValue: name), method != .password, method != .biometric else {
                throw Abort(.badRequest, reason: "\(name) is not a sign-in method here.")
            }
            chain.append(method)
        }
        let choices = [form.map_plus, form.map_minus, form.map_times, form.map_divide].map { $0 ?? "" }
        let mapping: String? =
            choices.allSatisfy({ !$0.isEmpty })
            ? zip(["+", "-", "*", "/"], choices).map { "\($0)=\($1)" }.joined(separator: ",") : nil
        await model.updateSignIn(
            chain: chain, operands: form.operands, mapping: mapping, codeLength: form.codeLength,
            totpCode: form.totpCode?.trimmingCharacters(in: .whitespaces), password: form.password)
        return await settingsAgain(request, model)
    }

    private func totpCode(_ request: Request) async throws -> Response {
        guard let model = await context.session.settings, let enrolment = await model.enrolment else {
            throw Abort(.notFound, reason: "No authenticator is being set up.")
        }
        let code = try QRCode(text: enrolment.uri, correction: .medium)
        return Response(status: .ok, headers: ["Content-Type": "image/svg+xml"], body: .init(string: code.svg))
    }

    private func removeDevice(_ request: Request) async throws -> Response {
        guard let model = await context.session.settings else { return request.redirect(to: .home) }
        guard let id = request.uuid(.device) else {
            throw Abort(.notFound, reason: "There is no such device.")
        }
        await model.removeDevice(id)
        return await settingsAgain(request, model)
    }

    private struct DeviceNameForm: Content {
        var name: String
    }

    private func renameDevice(_ request: Request) async throws -> Response {
        guard let model = await context.session.settings else { return request.redirect(to: .home) }
        guard let id = request.uuid(.device) else {
            throw Abort(.notFound, reason: "There is no such device.")
        }
        let form = try request.content.decode(DeviceNameForm.self)
        await model.renameDevice(id, to: form.name)
        return await settingsAgain(request, model)
    }

    private struct ReceiptsForm: Content {
        /// "on" or "off".
        var receipts: String
    }

    private func setReceipts(_ request: Request) async throws -> Response {
        guard let model = await context.session.settings else { return request.redirect(to: .home) }
        let form = try request.content.decode(ReceiptsForm.self)
        guard form.receipts == "on" || form.receipts == "off" else {
            throw Abort(.badRequest, reason: "Choose whether read receipts are on or off.")
        }
        await model.setReadReceipts(form.receipts == "on")
        return await settingsAgain(request, model)
    }

    private struct DeleteForm: Content {
        var confirm: String?
        var password: String
    }

    private func deleteAccount(_ request: Request) async throws -> Response {
        guard let model = await context.session.settings else { return request.redirect(to: .home) }
        let form = try request.content.decode(DeleteForm.self)
        guard form.confirm == "yes" else {
            throw Abort(.badRequest, reason: "Tick the box to confirm that the account should go.")
        }
        await model.deleteAccount(password: form.password)
        guard await model.isDeleted else { return await settingsAgain(request, model) }
        await context.session.accountDeleted()
        return request.redirect(to: .welcome)
    }
}
