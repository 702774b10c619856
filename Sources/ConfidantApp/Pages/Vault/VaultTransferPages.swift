import ConfidantKit
import ConfidantVault
import Foundation
import Vapor

/// Backing the vault up, to the server or a directory, and restoring it, with the progress kept
/// live on the vault page.
struct VaultTransferPages {
    let context: AppContext

    func register(on routes: any RoutesBuilder) {
        routes.post(.vaultBackup) { request in try await redirectingProblems(request, restoring: false) }
        routes.post(.vaultRestore) { request in try await redirectingProblems(request, restoring: true) }
        routes.get(.liveVaultTransfer) { request in liveTransfer(request) }
    }

    private struct TransferForm: Content {
        /// "server" or "directory".
        var target: String
        var directory: String?
        var passphrase: String?
        var backupId: String?
    }

    /// The vault page in any case: a refusal is shown there once (a reload does not post again).
    private func redirectingProblems(_ request: Request, restoring: Bool) async throws -> Response {
        do {
            return try await startTransfer(request, restoring: restoring)
        } catch {
            let problem = AppErrorPage.problem(for: error, request: request)
            guard problem.status.code < 500 else { throw error }
            await MainActor.run { context.session.flash = (problem.message, nil) }
            return request.redirect(to: .vault)
        }
    }

    /// Starts a backup or a restore and returns at once to the vault page, which follows it live.
    private func startTransfer(_ request: Request, restoring: Bool) async throws -> Response {
        let form = try request.content.decode(TransferForm.self)
        guard (form.directory?.count ?? 0) <= 4096, (form.backupId?.count ?? 0) <= 64 else {
            throw Abort(.badRequest, reason: "That directory or backup id is too long.")
        }
        let target: any BackupTarget
        switch form.target {
        case "server":
            guard let messenger = await context.session.messenger else {
                throw Abort(.conflict, reason: "Sign in to back up to the server.")
            }
            target = try await RelayBackupTarget(messenger: messenger)
        case "directory":
            let path = (form.directory ?? "").trimmingCharacters(in: .whitespaces)
            guard path.hasPrefix("/") else {
                throw Abort(
                    .unprocessableEntity, reason: "Give the backup directory as a full path, such as /media/usb/backup."
                )
            }
            await MainActor.run { context.session.lastBackupDirectory = path }
            target = DirectoryBackupTarget(root: URL(fileURLWithPath: path))
        default:
            throw Abort(.badRequest, reason: "Back up to the server or to a directory.")
        }
        let model = context.session.vault
        if restoring {
            guard let passphrase = form.passphrase, !passphrase.isEmpty else {
                throw Abort(.unprocessableEntity, reason: "Give the passphrase of the vault that was backed up.")
            }
            let backupID = form.backupId.flatMap { $0.isEmpty ? nil : $0 }
            await context.session.startVaultTransfer {
                await model.restore(from: target, passphrase: passphrase, backupID: backupID)
            }
        } else {
            guard await model.isUnlocked else { throw VaultError.locked }
            await context.session.startVaultTransfer { await model.backup(to: target) }
        }
        return request.redirect(to: .vault)
    }

    struct TransferRegion: Encodable, Sendable {
        let page: PageInfo
        let transfer: VaultTransferView?
    }

    /// The backup or restore as it goes: one fragment per object, and the outcome.
    private func liveTransfer(_ request: Request) -> Response {
        LiveRegion.response(for: request, template: "vault-transfer") { () async -> AsyncStream<TransferRegion>? in
            let model = context.session.vault
            return await observedValues {
                TransferRegion(page: context.info("Vault"), transfer: VaultTransferView(model.transfer))
            }
        }
    }
}
