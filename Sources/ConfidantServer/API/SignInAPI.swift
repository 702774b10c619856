import ConfidantAPI
import ConfidantAuth
import Foundation

/// Sign-in settings and sign-in transactions.
extension RelayAPI {
    func getAuthSettings(_ input: Operations.GetAuthSettings.Input) async throws -> Operations.GetAuthSettings.Output {
        .ok(.init(body: .json(try await services.signInSettings.settings(of: try caller().userID).wire)))
    }

    func updateAuthSettings(_ input: Operations.UpdateAuthSettings.Input) async throws
        -> Operations.UpdateAuthSettings.Output
    {
        let caller = try caller()
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let change = SignInSettingsService.Change(
            chain: body.chain.map(SignInMethod.init), operands: body.operands,
            codeLength: body.codeLength, mapping: body.mapping, totpSecret: body.totpSecret,
            totpCode: body.totpCode)
        let settings = try await services.signInSettings.update(change, password: body.password, of: caller)
        return .ok(.init(body: .json(settings.wire)))
    }

    func startSignIn(_ input: Operations.StartSignIn.Input) async throws -> Operations.StartSignIn.Output {
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let progress = try await services.signIn.start(
            email: body.email, identity: try Self.identity(body.identity.data), proof: body.proof,
            address: try clientAddress())
        return .created(.init(body: .json(progress)))
    }

    func createDeviceChallenge(_ input: Operations.CreateDeviceChallenge.Input) async throws
        -> Operations.CreateDeviceChallenge.Output
    {
        let issued = services.challenges.issue()
        return .created(.init(body: .json(.init(challenge: .init(issued.challenge), expiresAt: issued.expiresAt))))
    }

    func currentSignInStep(_ input: Operations.CurrentSignInStep.Input) async throws
        -> Operations.CurrentSignInStep.Output
    {
        .ok(
            .init(
                body: .json(
                    try await services.signIn.currentStep(
                        of: input.path.transactionId, resend: input.query.resend == true))))
    }

    func answerSignInStep(_ input: Operations.AnswerSignInStep.Input) async throws -> Operations.AnswerSignInStep.Output
    {
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let progress = try await services.signIn.answer(
            body.answer, method: SignInMethod(body.method), in: input.path.transactionId)
        return .ok(.init(body: .json(progress)))
    }
}
