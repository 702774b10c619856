import ConfidantCrypto
import ConfidantKit
import ConfidantVault
import Foundation
import Vapor

/// Memories in the vault: added with their files (the page's script shows the upload's
/// progress), edited, and deleted.
struct MemoryPages {
    let context: AppContext
    let vault: VaultPages

    func register(on routes: any RoutesBuilder) {
        routes.post(.vaultMemories, maximumBody: context.session.configuration.maxUploadBytes) { request in
            try await add(request)
        }
        routes.get(.deleteMemory(.key)) { request in try await confirmRemoval(request) }
        routes.post(.deleteMemory(.key)) { request in try await remove(request) }
        routes.get(.editMemory(.key)) { request in try await editPage(request) }
        routes.post(.editMemory(.key)) { request in try await edit(request) }
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
        let date = form.date.flatMap { try? Date($0 + "T12:00:00Z", strategy: .iso8601) } ?? Date()
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
            return try await vault.timeline(
                request, status: .unprocessableEntity,
                typed: (form.chapter, form.text ?? "", String((form.date ?? "").prefix(40))))
        }
        if wantsJSON {
            return try await UploadAnswer(location: AppRoute.vault.path, error: nil).encodeResponse(for: request)
        }
        return request.redirect(to: .vault)
    }

    /// A file name the vault can keep: no path, no leading dot, at most 120 characters.
    static func safeName(_ name: String, index: Int) -> String {
        let base = name.split(separator: "/").last.map(String.init) ?? ""
        let cleaned = String(base.filter { $0 != "\0" && $0 != "\\" }.drop { $0 == "." }.prefix(120))
        return cleaned.isEmpty ? "file-\(index + 1)" : cleaned
    }

    private func itemID(_ request: Request) throws -> UUID {
        guard let id = request.uuid(.item) else { throw Abort(.notFound, reason: "There is no such memory.") }
        return id
    }

    /// What the confirmation shows: the memory's day, the start of its text, how many files go.
    struct DeletePage: Encodable, Sendable {
        let page: PageInfo
        let date: String
        let excerpt: String
        let files: String?
        let delete: String
        let cancel: String
    }

    /// `GET`: asks before a memory goes (its text and files leave the vault for good).
    private func confirmRemoval(_ request: Request) async throws -> Response {
        let id = try itemID(request)
        let model = context.session.vault
        let page = try await MainActor.run { () throws -> DeletePage in
            guard model.isUnlocked else { throw VaultError.locked }
            guard let item = model.memory(id) else { throw Abort(.notFound, reason: "There is no such memory.") }
            let count = item.media.count
            return DeletePage(
                page: context.info("Delete a memory"), date: item.timestamp.formatted(date: .long, time: .omitted),
                excerpt: String((item.text ?? "").prefix(200)),
                files: count == 0 ? nil : count == 1 ? "its file" : "its \(count) files",
                delete: AppRoute.deleteMemory(.value(id)).path,
                cancel: AppRoute.vault.path(fragment: "memory-\(id.canonicalString)"))
        }
        return try await request.page("vault-delete", page)
    }

    private func remove(_ request: Request) async throws -> Response {
        await context.session.vault.removeMemory(try itemID(request))
        return request.redirect(to: .vault)
    }

    struct EditPage: Encodable, Sendable {
        let page: PageInfo
        let id: String
        let chapter: String
        let text: String
        let date: String
        let files: [VaultPageModel.File]
        let hasFiles: Bool
        let save: String
        let cancel: String

        /// - Parameter typed: what the form held when saving it failed; the page shows it again,
        ///   not the stored memory, so that nothing typed is lost.
        init(page: PageInfo, memory item: ConfidantVault.Item, typed: (text: String, date: String)? = nil) {
            self.page = page
            id = item.id.canonicalString
            chapter = item.chapterTitle
            text = typed?.text ?? item.text ?? ""
            date = typed?.date ?? item.timestamp.formatted(.iso8601.year().month().day())
            files = item.media.map(VaultPageModel.File.init)
            hasFiles = !item.media.isEmpty
            save = AppRoute.editMemory(.value(item.id)).path
            cancel = AppRoute.vault.path(fragment: "memory-\(item.id.canonicalString)")
        }
    }

    /// The edit form: the stored memory, or after a failed save the typed `form` with `problem`.
    private func editPage(
        _ request: Request, status: HTTPStatus = .ok, form: EditForm? = nil, problem: String? = nil
    ) async throws -> Response {
        let id = try itemID(request)
        let model = context.session.vault
        let page = try await MainActor.run { () throws -> EditPage in
            guard model.isUnlocked else { throw VaultError.locked }
            guard let item = model.memory(id) else { throw Abort(.notFound, reason: "There is no such memory.") }
            let error = status == .ok ? nil : problem ?? model.error ?? "The memory was not saved."
            return EditPage(
                page: context.info("Edit a memory", error: error), memory: item,
                typed: form.map { ($0.text ?? "", $0.date) })
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
        guard form.date.count <= 40, let date = try? Date(form.date + "T12:00:00Z", strategy: .iso8601) else {
            return try await editPage(
                request, status: .badRequest, form: form, problem: "The date must be a day, such as 2024-06-01.")
        }
        let model = context.session.vault
        guard await model.isUnlocked else { throw VaultError.locked }
        guard await model.memory(id) != nil else { throw Abort(.notFound, reason: "There is no such memory.") }
        guard await model.editMemory(id, text: form.text, date: date) else {
            return try await editPage(request, status: .unprocessableEntity, form: form)
        }
        return request.redirect(to: .vault, fragment: "memory-\(id.canonicalString)")
    }
}
