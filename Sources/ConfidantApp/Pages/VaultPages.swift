import ConfidantKit
import ConfidantVault
import Foundation
import Vapor

/// The vault: create, unlock or restore, the timeline of chapters and memories with photos shown
/// (inline and one at a time in a viewer) and videos streamed (decrypted per range request),
/// adding, editing and deleting memories, backups to the server or a directory with their
/// progress kept live: renderings of `VaultViewModel`.
struct VaultPages {
    let context: AppContext

    func register(on routes: any RoutesBuilder) {
        routes.get("vault") { request in try await timeline(request) }
        routes.post("vault", "create") { request in try await open(request, creating: true) }
        routes.post("vault", "unlock") { request in try await open(request, creating: false) }
        routes.post("vault", "lock") { request in
            await context.session.vault.lock()
            return request.redirect(to: "/vault")
        }
        routes.on(
            .POST, "vault", "memories",
            body: .collect(maxSize: ByteCount(value: context.session.configuration.maxUploadBytes))
        ) { request in try await add(request) }
        routes.post("vault", "memories", ":item", "delete") { request in try await remove(request) }
        routes.get("vault", "memories", ":item", "edit") { request in try await editPage(request) }
        routes.post("vault", "memories", ":item", "edit") { request in try await edit(request) }
        routes.get("vault", "media", ":file") { request in try await media(request) }
        routes.get("vault", "photos", ":file") { request in try await photo(request) }
        routes.post("vault", "backup") { request in try await startTransfer(request, restoring: false) }
        routes.post("vault", "restore") { request in try await startTransfer(request, restoring: true) }
        routes.get("live", "vault-transfer") { request in liveTransfer(request) }
    }

    struct FileView: Encodable, Sendable {
        let id: String
        let name: String
        let isImage: Bool
        let isVideo: Bool
        let isOther: Bool
    }

    struct ItemView: Encodable, Sendable {
        let id: String
        let date: String
        let isoDate: String
        let text: String?
        let files: [FileView]
    }

    struct SectionView: Encodable, Sendable {
        let title: String
        let items: [ItemView]
    }

    /// A backup or restore as the page shows it.
    struct TransferView: Encodable, Sendable {
        let running: Bool
        let heading: String
        /// Objects done and in all, for a progress bar, once known.
        let done: Int?
        let total: Int?
        let percent: Int?
        let message: String?
        let failed: Bool
    }

    struct TransferRegion: Encodable, Sendable {
        let page: PageInfo
        let transfer: TransferView?
    }

    struct VaultPage: Encodable, Sendable {
        let page: PageInfo
        let exists: Bool
        let unlocked: Bool
        let sections: [SectionView]
        let noChapters: Bool
        let lastChapter: String
        let today: String
        let maxUpload: String
        let transfer: TransferView?
        let backupDirectory: String
    }

    @MainActor
    static func transferView(_ transfer: VaultTransfer?) -> TransferView? {
        guard let transfer else { return nil }
        let verb = transfer.kind == .backup ? "Backing up to" : "Restoring from"
        switch transfer.outcome {
        case .running:
            let percent = transfer.progress.map { Int(($0.fraction * 100).rounded()) }
            return TransferView(
                running: true, heading: "\(verb) \(transfer.target)…", done: transfer.progress?.object,
                total: transfer.progress?.objects, percent: percent, message: nil, failed: false)
        case .finished(let report):
            return TransferView(
                running: false, heading: transfer.kind == .backup ? "Backup finished" : "Restore finished",
                done: nil, total: nil, percent: nil, message: report, failed: false)
        case .failed(let reason):
            return TransferView(
                running: false, heading: transfer.kind == .backup ? "Backup failed" : "Restore failed", done: nil,
                total: nil, percent: nil, message: reason, failed: true)
        }
    }

    private func timeline(_ request: Request, status: HTTPStatus = .ok) async throws -> Response {
        let session = context.session
        let page = await MainActor.run { () -> VaultPage in
            let model = session.vault
            let sections = model.timeline.map { section in
                SectionView(
                    title: section.chapter.title,
                    items: section.items.map { item in
                        ItemView(
                            id: item.id.uuidString.lowercased(),
                            date: item.timestamp.formatted(date: .long, time: .omitted),
                            isoDate: item.timestamp.formatted(.iso8601), text: item.text,
                            files: item.media.map { Self.fileView($0) })
                    })
            }
            return VaultPage(
                page: context.info("Vault", error: model.error), exists: model.exists, unlocked: model.isUnlocked,
                sections: sections, noChapters: sections.isEmpty, lastChapter: sections.first?.title ?? "",
                today: Date().formatted(.iso8601.year().month().day()),
                maxUpload: ByteCountFormatter.string(
                    fromByteCount: Int64(session.configuration.maxUploadBytes), countStyle: .file),
                transfer: Self.transferView(model.transfer), backupDirectory: session.lastBackupDirectory)
        }
        return try await request.page("vault", page, status: status)
    }

    private struct PassphraseForm: Content {
        var passphrase: String
    }

    private func open(_ request: Request, creating: Bool) async throws -> Response {
        let form = try request.content.decode(PassphraseForm.self)
        let model = context.session.vault
        if creating {
            await model.create(passphrase: form.passphrase)
        } else {
            await model.unlock(passphrase: form.passphrase)
        }
        guard await model.isUnlocked else { return try await timeline(request, status: .unauthorized) }
        return request.redirect(to: "/vault")
    }

    private struct MemoryForm: Content {
        var chapter: String
        var text: String?
        var date: String?
        var files: [File]?
    }

    /// Files arrive in the request body; each is written to a private folder of the profile
    /// (0700), encrypted into the vault, and removed, whatever happens.
    private func add(_ request: Request) async throws -> Response {
        let form = try request.content.decode(MemoryForm.self)
        let files = (form.files ?? []).filter { !$0.filename.isEmpty || $0.data.readableBytes > 0 }
        guard form.chapter.count <= 200, (form.text?.count ?? 0) <= 100_000, files.count <= 50 else {
            throw Abort(.payloadTooLarge, reason: "A memory holds up to 50 files and 100,000 characters of text.")
        }
        // The page's script uploads with progress and asks for JSON: it shows a refusal in place.
        let wantsJSON = request.headers.first(name: .accept) == "application/json"
        let date =
            form.date.flatMap { try? Date($0 + "T12:00:00Z", strategy: .iso8601) } ?? Date()
        let uploads = context.session.configuration.profile.directory.appendingPathComponent(
            VaultUploads.prefix + UUID().uuidString)
        try FileManager.default.createDirectory(
            at: uploads, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: uploads) }
        var urls: [URL] = []
        for (index, file) in files.enumerated() {
            let url = uploads.appendingPathComponent(Self.safeName(file.filename, index: index))
            guard
                FileManager.default.createFile(
                    atPath: url.path, contents: Data(buffer: file.data), attributes: [.posixPermissions: 0o600])
            else { throw Abort(.internalServerError, reason: "The upload could not be stored for encryption.") }
            urls.append(url)
        }
        let model = context.session.vault
        guard await model.addMemory(chapterTitle: form.chapter, text: form.text, files: urls, date: date) else {
            if wantsJSON {
                let reason = await model.error ?? "The memory was not added."
                return try await UploadAnswer(location: nil, error: reason).encodeResponse(
                    status: .unprocessableEntity, for: request)
            }
            return try await timeline(request, status: .unprocessableEntity)
        }
        if wantsJSON { return try await UploadAnswer(location: "/vault", error: nil).encodeResponse(for: request) }
        return request.redirect(to: "/vault")
    }

    /// What an upload made by the page's script gets back.
    struct UploadAnswer: Content {
        let location: String?
        let error: String?
    }

    /// A file name the vault can keep: no path, no leading dot, at most 120 characters.
    static func safeName(_ name: String, index: Int) -> String {
        let base = name.split(separator: "/").last.map(String.init) ?? ""
        let cleaned = String(base.filter { $0 != "\0" && $0 != "\\" }.drop { $0 == "." }.prefix(120))
        return cleaned.isEmpty ? "file-\(index + 1)" : cleaned
    }

    private func itemID(_ request: Request) throws -> UUID {
        guard let text = request.parameters.get("item"), let id = UUID(uuidString: text) else {
            throw Abort(.notFound, reason: "There is no such memory.")
        }
        return id
    }

    private func remove(_ request: Request) async throws -> Response {
        await context.session.vault.removeMemory(try itemID(request))
        return request.redirect(to: "/vault")
    }

    // MARK: Editing a memory

    struct EditPage: Encodable, Sendable {
        let page: PageInfo
        let id: String
        let chapter: String
        let text: String
        let date: String
        let files: [FileView]
        let hasFiles: Bool
    }

    private func editPage(_ request: Request, status: HTTPStatus = .ok) async throws -> Response {
        let id = try itemID(request)
        let model = context.session.vault
        let page = try await MainActor.run { () throws -> EditPage in
            guard model.isUnlocked else { throw VaultError.locked }
            guard let item = model.memory(id) else { throw Abort(.notFound, reason: "There is no such memory.") }
            return EditPage(
                page: context.info("Edit a memory", error: status == .ok ? nil : model.error),
                id: id.uuidString.lowercased(), chapter: item.chapterTitle, text: item.text ?? "",
                date: item.timestamp.formatted(.iso8601.year().month().day()),
                files: item.media.map { Self.fileView($0) }, hasFiles: !item.media.isEmpty)
        }
        return try await request.page("vault-edit", page, status: status)
    }

    private struct EditForm: Content {
        var text: String?
        var date: String
    }

    private func edit(_ request: Request) async throws -> Response {
        let id = try itemID(request)
        let form = try request.content.decode(EditForm.self)
        guard (form.text?.count ?? 0) <= 100_000 else {
            throw Abort(.payloadTooLarge, reason: "A memory holds up to 100,000 characters of text.")
        }
        guard let date = try? Date(form.date + "T12:00:00Z", strategy: .iso8601) else {
            throw Abort(.badRequest, reason: "The date must be a day, such as 2024-06-01.")
        }
        let model = context.session.vault
        guard await model.isUnlocked else { throw VaultError.locked }
        guard await model.memory(id) != nil else { throw Abort(.notFound, reason: "There is no such memory.") }
        guard await model.editMemory(id, text: form.text, date: date) else {
            return try await editPage(request, status: .unprocessableEntity)
        }
        return request.redirect(to: "/vault#memory-\(id.uuidString.lowercased())")
    }

    static func fileView(_ file: MediaFile) -> FileView {
        let image = file.contentType.hasPrefix("image/")
        let video = file.contentType.hasPrefix("video/")
        return FileView(
            id: file.id.uuidString.lowercased(), name: file.name, isImage: image, isVideo: video,
            isOther: !image && !video)
    }

    // MARK: The photo viewer

    struct PhotoPage: Encodable, Sendable {
        let page: PageInfo
        let id: String
        let name: String
        let chapter: String
        let date: String
        let text: String?
        let position: Int
        let count: Int
        let previous: String?
        let next: String?
    }

    /// One photo at a time, in timeline order, with the previous and next photo a link (and an
    /// arrow key) away.
    private func photo(_ request: Request) async throws -> Response {
        guard let text = request.parameters.get("file"), let id = UUID(uuidString: text) else {
            throw Abort(.notFound, reason: "There is no such photo.")
        }
        let model = context.session.vault
        let page = try await MainActor.run { () throws -> PhotoPage in
            guard model.isUnlocked else { throw VaultError.locked }
            let photos = model.timeline.flatMap { section in
                section.items.flatMap { item in
                    item.media.filter { $0.contentType.hasPrefix("image/") }.map { (file: $0, item: item) }
                }
            }
            guard let index = photos.firstIndex(where: { $0.file.id == id }) else {
                throw Abort(.notFound, reason: "There is no such photo in the vault.")
            }
            let (file, item) = photos[index]
            return PhotoPage(
                page: context.info(file.name), id: id.uuidString.lowercased(), name: file.name,
                chapter: item.chapterTitle, date: item.timestamp.formatted(date: .long, time: .omitted),
                text: item.text, position: index + 1, count: photos.count,
                previous: index > 0 ? photos[index - 1].file.id.uuidString.lowercased() : nil,
                next: index + 1 < photos.count ? photos[index + 1].file.id.uuidString.lowercased() : nil)
        }
        return try await request.page("vault-photo", page)
    }

    // MARK: Backup and restore

    private struct TransferForm: Content {
        /// "server" or "directory".
        var target: String
        var directory: String?
        var passphrase: String?
        var backupId: String?
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
        return request.redirect(to: "/vault")
    }

    /// The backup or restore as it goes: one fragment per object, and the outcome.
    private func liveTransfer(_ request: Request) -> Response {
        LiveRegion.response(for: request, template: "vault-transfer") { () async -> AsyncStream<TransferRegion>? in
            let model = context.session.vault
            return await observedValues {
                TransferRegion(page: context.info("Vault"), transfer: Self.transferView(model.transfer))
            }
        }
    }

    /// A photo or video, decrypted as it is sent: the whole file, or the one byte range asked
    /// for (206), a segment at a time.
    private func media(_ request: Request) async throws -> Response {
        guard let text = request.parameters.get("file"), let id = UUID(uuidString: text) else {
            throw Abort(.notFound, reason: "There is no such file.")
        }
        let model = context.session.vault
        let (file, reader) = try await MainActor.run { try model.media(id) }
        return try MediaResponse.response(
            for: request, reader: reader, contentType: file.contentType, name: file.name)
    }
}
