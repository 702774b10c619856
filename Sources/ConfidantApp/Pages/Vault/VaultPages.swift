import ConfidantKit
import ConfidantVault
import Foundation
import Vapor

/// The vault: create, unlock or lock it, and its timeline of chapters and memories:
/// `VaultViewModel` rendered through `VaultPageModel`. Memories, media and backups have pages of
/// their own (`MemoryPages`, `VaultMediaPages`, `VaultTransferPages`).
struct VaultPages {
    let context: AppContext

    func register(on routes: any RoutesBuilder) {
        routes.get(.vault) { request in try await timeline(request) }
        routes.post(.vaultCreate) { request in try await open(request, creating: true) }
        routes.post(.vaultUnlock) { request in try await open(request, creating: false) }
        routes.post(.vaultLock) { request in
            await context.session.vault.lock()
            return request.redirect(to: .vault)
        }
        MemoryPages(context: context, vault: self).register(on: routes)
        VaultMediaPages(context: context).register(on: routes)
        VaultTransferPages(context: context).register(on: routes)
    }

    /// The vault page; `status` other than OK for a form that failed (the model says why).
    /// The vault page; after a failed add, `typed` (chapter, text, day) fills the new memory's
    /// form again, so that nothing typed is lost (the files must be chosen again).
    func timeline(
        _ request: Request, status: HTTPStatus = .ok, typed: (chapter: String, text: String, date: String)? = nil
    ) async throws -> Response {
        let session = context.session
        let page = await MainActor.run { () -> VaultPageModel in
            let model = session.vault
            let flash = session.takeFlash()
            var page = VaultPageModel(
                page: context.info("Vault", error: flash?.error ?? model.error), exists: model.exists,
                unlocked: model.isUnlocked,
                timeline: model.timeline, transfer: model.transfer,
                maxUploadBytes: session.configuration.maxUploadBytes, backupDirectory: session.lastBackupDirectory)
            page.idleLock = session.configuration.vaultIdleLock.map { limit in
                let minutes = Int(limit.components.seconds / 60)
                return minutes == 1 ? "1 minute" : "\(minutes) minutes"
            }
            if let typed {
                page.lastChapter = typed.chapter
                page.typedText = typed.text
                if !typed.date.isEmpty { page.today = typed.date }
            }
            return page
        }
        return try await request.page("vault", page, status: status)
    }

    private struct PassphraseForm: Content {
        var passphrase: String
        /// The passphrase again, when creating.
        var confirmation: String?
    }

    private func open(_ request: Request, creating: Bool) async throws -> Response {
        let form = try request.content.decode(PassphraseForm.self)
        let model = context.session.vault
        if creating {
            await model.create(passphrase: form.passphrase, confirmation: form.confirmation ?? "")
        } else {
            await model.unlock(passphrase: form.passphrase)
        }
        // The vault page either way; it shows why the passphrase was refused.
        return request.redirect(to: .vault)
    }
}
