import ConfidantKit
import ConfidantVault
import Foundation
import Vapor

/// The vault: create or unlock, the timeline of chapters and memories with photos shown and
/// videos streamed (decrypted per range request), adding and deleting memories: renderings of
/// `VaultViewModel`.
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
        routes.get("vault", "media", ":file") { request in try await media(request) }
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

    struct VaultPage: Encodable, Sendable {
        let page: PageInfo
        let exists: Bool
        let unlocked: Bool
        let sections: [SectionView]
        let noChapters: Bool
        let lastChapter: String
        let today: String
        let maxUpload: String
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
                            files: item.media.map { file in
                                let image = file.contentType.hasPrefix("image/")
                                let video = file.contentType.hasPrefix("video/")
                                return FileView(
                                    id: file.id.uuidString.lowercased(), name: file.name, isImage: image,
                                    isVideo: video, isOther: !image && !video)
                            })
                    })
            }
            return VaultPage(
                page: context.info("Vault", error: model.error), exists: model.exists, unlocked: model.isUnlocked,
                sections: sections, noChapters: sections.isEmpty, lastChapter: sections.first?.title ?? "",
                today: Date().formatted(.iso8601.year().month().day()),
                maxUpload: ByteCountFormatter.string(
                    fromByteCount: Int64(session.configuration.maxUploadBytes), countStyle: .file))
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
            return try await timeline(request, status: .unprocessableEntity)
        }
        return request.redirect(to: "/vault")
    }

    /// A file name the vault can keep: no path, no leading dot, at most 120 characters.
    static func safeName(_ name: String, index: Int) -> String {
        let base = name.split(separator: "/").last.map(String.init) ?? ""
        let cleaned = String(base.filter { $0 != "\0" && $0 != "\\" }.drop { $0 == "." }.prefix(120))
        return cleaned.isEmpty ? "file-\(index + 1)" : cleaned
    }

    private func remove(_ request: Request) async throws -> Response {
        guard let text = request.parameters.get("item"), let id = UUID(uuidString: text) else {
            throw Abort(.notFound, reason: "There is no such memory.")
        }
        await context.session.vault.removeMemory(id)
        return request.redirect(to: "/vault")
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
