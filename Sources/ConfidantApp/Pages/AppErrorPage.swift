import ConfidantKit
import ConfidantVault
import Foundation
import Vapor

/// What a failed request shows: a page with a title and a sentence the user can act on, never a
/// stack trace; errors nobody anticipated are logged and shown in general words.
enum AppErrorPage {
    struct Problem: Encodable, Sendable {
        let page: PageInfo
        let heading: String
        let message: String
    }

    static func response(for error: any Error, request: Request) async -> Response {
        let (status, message) = problem(for: error, request: request)
        let heading =
            switch status.code {
            case 401 where (error as? VaultError) == .locked: "The vault is locked"
            case 401, 403: "Not allowed"
            case 404: "Not found"
            case 413: "Too large"
            case 500...: "Something went wrong"
            default: "That did not work"
            }
        let problem = Problem(
            page: PageInfo(title: heading, csrf: "", signedInAs: nil, error: nil), heading: heading, message: message)
        do {
            return try await request.page("problem", problem, status: status)
        } catch {
            return Response(
                status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: .init(string: message))
        }
    }

    /// The status and the sentence for `error`; errors nobody anticipated are logged.
    static func problem(for error: any Error, request: Request) -> (status: HTTPResponseStatus, message: String) {
        let status: HTTPResponseStatus
        let message: String
        switch error {
        case let abort as any AbortError:
            status = abort.status
            message = abort.reason
        case let kit as ConfidantKitError:
            status = kit.isTransient ? .serviceUnavailable : .unprocessableEntity
            message = kit.description
        case let vault as VaultError:
            (status, message) = vaultProblem(vault)
        default:
            status = .internalServerError
            message = "Something went wrong in the app; it is written to the app's log."
            request.logger.error("request failed: \(String(reflecting: error))")
        }
        return (status, message)
    }

    /// A vault error's status and words: a locked vault or a missing file is the user's to act
    /// on; damage is reported as it is, never as "something went wrong".
    private static func vaultProblem(_ error: VaultError) -> (HTTPResponseStatus, String) {
        switch error {
        case .locked: (.unauthorized, "The vault is locked. Open Vault and unlock it with its passphrase.")
        case .wrongPassphrase: (.unauthorized, "Wrong vault passphrase.")
        case .notFound: (.notFound, "The vault has no such memory or file (\(error.description)).")
        case .notInitialized: (.notFound, "This profile has no vault yet. Open Vault to create one.")
        default: (.unprocessableEntity, "The vault could not do that: \(error.description).")
        }
    }
}
