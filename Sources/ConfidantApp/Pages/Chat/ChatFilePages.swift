import ConfidantKit
import Foundation
import Vapor

/// Files in a chat: sent from the page (with its uploading script's progress, or a plain form),
/// and fetched and decrypted as they are shown or saved.
struct ChatFilePages {
    let context: AppContext

    func register(on routes: any RoutesBuilder) {
        routes.post(.attach(.key), maximumBody: context.session.configuration.maxUploadBytes) { request in
            try await attach(request)
        }
        routes.get(.file(.key, message: .key, index: .key)) { request in try await file(request) }
    }

    private struct AttachForm: Content {
        var caption: String?
        var files: [File]?
    }

    /// Files posted by the page: written to a private folder of the profile, encrypted and sent,
    /// and removed, whatever happens.
    private func attach(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        let form = try request.content.decode(AttachForm.self)
        let files = (form.files ?? []).filter { !$0.filename.isEmpty || $0.data.readableBytes > 0 }
        let here = AppRoute.chat(.value(contact.id))
        let wantsJSON = request.headers.first(name: .accept) == "application/json"
        guard !files.isEmpty, files.count <= ChatPayload.maximumAttachments,
            (form.caption?.utf8.count ?? 0) <= ChatPayload.maximumTextBytes
        else {
            throw Abort(.unprocessableEntity, reason: "Choose up to \(ChatPayload.maximumAttachments) files to send.")
        }
        let uploads = context.session.configuration.profile.directory.appendingPathComponent(
            VaultUploads.prefix + UUID().uuidString)
        try FileManager.default.createDirectory(
            at: uploads, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: uploads) }
        var sources: [AttachmentSource] = []
        for (index, file) in files.enumerated() {
            let name = MemoryPages.safeName(file.filename, index: index)
            let url = uploads.appendingPathComponent("\(index)-\(UUID().uuidString)")
            guard
                FileManager.default.createFile(
                    atPath: url.path, contents: Data(buffer: file.data), attributes: [.posixPermissions: 0o600])
            else { throw Abort(.internalServerError, reason: "The upload could not be stored for encryption.") }
            sources.append(AttachmentSource(url: url, name: name, contentType: file.contentType?.description))
        }
        let caption = form.caption.flatMap { $0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : $0 }
        do {
            _ = try await messenger.send(caption, attachments: sources, to: contact)
        } catch let error as ConfidantKitError {
            if wantsJSON {
                return try await UploadAnswer(location: nil, error: "Not sent: \(error.description)")
                    .encodeResponse(status: .unprocessableEntity, for: request)
            }
            throw Abort(.unprocessableEntity, reason: "Not sent: \(error.description)")
        }
        if wantsJSON {
            return try await UploadAnswer(location: here.path, error: nil).encodeResponse(for: request)
        }
        return request.redirect(to: here)
    }

    /// An attachment, fetched and decrypted as it is sent (ranges for players, as in the vault).
    private func file(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        let id = try context.messageID(request)
        guard let index = request.text(.index).flatMap(Int.init), index >= 0 else {
            throw Abort(.notFound, reason: "There is no such file.")
        }
        let (file, reader) = try await messenger.attachmentReader(of: id, index: index, with: contact.id)
        // Only pictures are shown inline; anything else (an HTML file, say) is a download.
        let type = file.isImage ? file.contentType : "application/octet-stream"
        return try MediaResponse.response(for: request, reader: reader, contentType: type, name: file.name)
    }
}

/// What an upload made by a page's script gets back: where to go, or why it was refused.
struct UploadAnswer: Content {
    let location: String?
    let error: String?
}
