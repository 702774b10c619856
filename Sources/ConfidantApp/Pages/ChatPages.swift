import ConfidantCrypto
import ConfidantKit
import Foundation
import Vapor

/// A chat (live), sending with Enter, files with their progress, retry, edits and deletions of
/// your own messages, the disappearing timer, the key-change confirmation, and verification by
/// safety numbers with QR codes: renderings of `ChatViewModel`.
struct ChatPages {
    let context: AppContext

    func register(on routes: any RoutesBuilder) {
        routes.get("chat", "with") { request in try await open(request) }
        routes.get("chat", ":peer") { request in try await chat(request) }
        routes.get("live", "chat", ":peer") { request in try await live(request) }
        routes.post("chat", ":peer", "send") { request in try await send(request) }
        routes.post("chat", ":peer", "retry", ":message") { request in try await retry(request) }
        routes.get("chat", ":peer", "verify") { request in try await verification(request) }
        routes.post("chat", ":peer", "verify") { request in try await markVerified(request) }
        routes.get("chat", ":peer", "verify", ":device") { request in try await qrCode(request) }
        routes.on(
            .POST, "chat", ":peer", "attach",
            body: .collect(maxSize: ByteCount(value: context.session.configuration.maxUploadBytes))
        ) { request in try await attach(request) }
        routes.get("chat", ":peer", "files", ":message", ":index") { request in try await file(request) }
        routes.get("chat", ":peer", "messages", ":message", "edit") { request in try await editPage(request) }
        routes.post("chat", ":peer", "messages", ":message", "edit") { request in try await edit(request) }
        routes.post("chat", ":peer", "messages", ":message", "delete") { request in try await delete(request) }
        routes.post("chat", ":peer", "timer") { request in try await setTimer(request) }
    }

    /// The signed-in messenger and the contact the path names; a peer this profile never saw is 404.
    private func peer(_ request: Request) async throws -> (Messenger, Contact) {
        guard let messenger = await context.session.messenger else {
            throw Abort(.unauthorized, reason: "Sign in first.")
        }
        guard let text = request.parameters.get("peer"), let id = UUID(uuidString: text),
            let contact = try await messenger.knownContact(id)
        else {
            throw Abort(.notFound, reason: "There is no such conversation on this device.")
        }
        return (messenger, contact)
    }

    /// `/chat/with?email=`: finds the user in the directory, then their chat.
    private func open(_ request: Request) async throws -> Response {
        guard let messenger = await context.session.messenger else { return request.redirect(to: "/") }
        let email = (try? request.query.get(String.self, at: "email")) ?? ""
        guard !email.isEmpty, email.count <= 320 else {
            throw Abort(.badRequest, reason: "Choose someone to write to.")
        }
        do {
            let contact = try await messenger.contact(email: email)
            return request.redirect(to: "/chat/\(contact.id.uuidString.lowercased())")
        } catch ConfidantKitError.unknownUser {
            throw Abort(.notFound, reason: "Nobody with the e-mail \(email) is on this server.")
        }
    }

    struct FileView: Encodable, Sendable {
        let url: String
        let name: String
        let size: String
        let isImage: Bool
    }

    struct MessageView: Encodable, Sendable {
        let id: String
        let peerID: String
        let side: String
        let text: String
        let hasText: Bool
        let unreadable: Bool
        let time: String
        let isoTime: String
        let status: String?
        let failed: Bool
        let edited: Bool
        let deleted: Bool
        let disappearing: Bool
        let files: [FileView]
        let hasFiles: Bool
        let canChange: Bool
    }

    struct TimerChoice: Encodable, Sendable {
        let seconds: Int
        let label: String
        let selected: Bool
    }

    struct ChatPage: Encodable, Sendable {
        let page: PageInfo
        let peer: PersonView
        let messages: [MessageView]
        let keyChangeBanner: String?
        let offline: String?
        let confirmKeyChange: Bool
        let draft: String
        let timers: [TimerChoice]
        let timer: String?
        let maxUpload: String
    }

    static let timerChoices = [0, 30, 300, 3600, 86_400, 604_800]

    @MainActor
    private func render(_ model: ChatViewModel, confirm: Bool = false, draft: String = "", error: String? = nil)
        -> ChatPage
    {
        let peerID = model.peer.id.uuidString.lowercased()
        let messages = model.messages.map { message in
            let status = DeliveryStatusText.describe(message)
            let failed = if case .failed = message.status { true } else { false }
            let messageID = message.id.uuidString.lowercased()
            return MessageView(
                id: messageID, peerID: peerID,
                side: message.direction == .outgoing ? "mine" : message.direction == .notice ? "notice" : "theirs",
                text: message.text == nil && !message.attachments.isEmpty && !message.isDeleted
                    ? "" : message.displayText,
                hasText: message.text != nil || message.attachments.isEmpty || message.isDeleted,
                unreadable: message.isUnreadable || message.isDeleted,
                time: message.sentAt.formatted(date: .abbreviated, time: .shortened),
                isoTime: message.sentAt.formatted(.iso8601), status: status, failed: failed,
                edited: message.editedAt != nil && !message.isDeleted, deleted: message.isDeleted,
                disappearing: message.expiresAt != nil,
                files: message.attachments.map { file in
                    FileView(
                        url: "/chat/\(peerID)/files/\(messageID)/\(file.index)", name: file.name,
                        size: ByteCountFormatter.string(fromByteCount: Int64(file.size), countStyle: .file),
                        isImage: file.isImage)
                }, hasFiles: !message.attachments.isEmpty,
                canChange: message.direction == .outgoing && !message.isDeleted && !failed)
        }
        let timer = model.disappearingTimer ?? 0
        return ChatPage(
            page: context.info(model.peer.displayName, error: error), peer: PersonView(model.peer),
            messages: messages, keyChangeBanner: model.keyChangeBanner,
            offline: ConnectionText.offline(model.connection),
            confirmKeyChange: confirm, draft: draft,
            timers: Self.timerChoices.map {
                TimerChoice(seconds: $0, label: $0 == 0 ? "Off" : DisappearingTimer.describe($0), selected: $0 == timer)
            },
            timer: timer == 0 ? nil : DisappearingTimer.describe(timer),
            maxUpload: ByteCountFormatter.string(
                fromByteCount: Int64(context.session.configuration.maxUploadBytes), countStyle: .file))
    }

    private func chat(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await peer(request)
        let model = await ChatViewModel(messenger: messenger, peer: contact)
        await model.load()
        let held = await context.session.heldDrafts[contact.id]
        let page = await render(model, confirm: held != nil, draft: held ?? "", error: model.error)
        return try await request.page("chat", page)
    }

    /// The messages as they change, while the chat is open (it marks arrivals read, as a user
    /// looking at the chat has read them).
    private func live(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await peer(request)
        return LiveRegion.response(for: request, template: "chat-messages") { () async -> AsyncStream<ChatPage>? in
            let model = await ChatViewModel(messenger: messenger, peer: contact)
            await model.load()
            let running = Task { await model.run() }
            let values = await observedValues { render(model) }
            return AsyncStream { continuation in
                let forwarding = Task {
                    for await value in values { continuation.yield(value) }
                    continuation.finish()
                }
                continuation.onTermination = { _ in
                    forwarding.cancel()
                    running.cancel()
                }
            }
        }
    }

    private struct SendForm: Content {
        var draft: String
        var confirmKeyChange: Bool?
    }

    private struct SendResult: Content {
        var ok: Bool
        var reload: String?
    }

    private func send(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await peer(request)
        let form = try request.content.decode(SendForm.self)
        let here = "/chat/\(contact.id.uuidString.lowercased())"
        // The page's script asks for exactly this; a browser's form navigation accepts */*, which
        // Vapor's media-type comparison would match against JSON too.
        let wantsJSON = request.headers.first(name: .accept) == "application/json"
        let model = await ChatViewModel(messenger: messenger, peer: contact)
        await MainActor.run { model.draft = form.draft }
        await model.send(confirmKeyChange: form.confirmKeyChange == true)
        let needsConfirmation = await MainActor.run { () -> Bool in
            if model.needsKeyChangeConfirmation {
                context.session.heldDrafts[contact.id] = form.draft
                return true
            }
            context.session.heldDrafts[contact.id] = nil
            return false
        }
        if let error = await model.error, !needsConfirmation {
            throw Abort(.unprocessableEntity, reason: "Not sent: \(error)")
        }
        if wantsJSON {
            return try await SendResult(ok: !needsConfirmation, reload: needsConfirmation ? here : nil)
                .encodeResponse(for: request)
        }
        return request.redirect(to: here)
    }

    private func retry(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await peer(request)
        guard let text = request.parameters.get("message"), let id = UUID(uuidString: text) else {
            throw Abort(.notFound, reason: "There is no such message.")
        }
        let model = await ChatViewModel(messenger: messenger, peer: contact)
        await model.retry(id)
        return request.redirect(to: "/chat/\(contact.id.uuidString.lowercased())")
    }

    // MARK: Files, edits, deletions, the timer

    private struct AttachForm: Content {
        var caption: String?
        var files: [File]?
    }

    /// Files posted by the page's uploading script (or a plain form): written to a private
    /// folder of the profile, encrypted and sent, and removed, whatever happens.
    private func attach(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await peer(request)
        let form = try request.content.decode(AttachForm.self)
        let files = (form.files ?? []).filter { !$0.filename.isEmpty || $0.data.readableBytes > 0 }
        let here = "/chat/\(contact.id.uuidString.lowercased())"
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
            let name = VaultPages.safeName(file.filename, index: index)
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
                return try await VaultPages.UploadAnswer(location: nil, error: "Not sent: \(error.description)")
                    .encodeResponse(status: .unprocessableEntity, for: request)
            }
            throw Abort(.unprocessableEntity, reason: "Not sent: \(error.description)")
        }
        if wantsJSON {
            return try await VaultPages.UploadAnswer(location: here, error: nil).encodeResponse(for: request)
        }
        return request.redirect(to: here)
    }

    private func messageID(_ request: Request) throws -> UUID {
        guard let text = request.parameters.get("message"), let id = UUID(uuidString: text) else {
            throw Abort(.notFound, reason: "There is no such message.")
        }
        return id
    }

    /// An attachment, fetched and decrypted as it is sent (ranges for players, as in the vault).
    private func file(_ request: Request) async throws -> Response {
        let (messenger, _) = try await peer(request)
        let id = try messageID(request)
        guard let index = request.parameters.get("index").flatMap(Int.init), index >= 0 else {
            throw Abort(.notFound, reason: "There is no such file.")
        }
        let (file, reader) = try await messenger.attachmentReader(of: id, index: index)
        // Only pictures are shown inline; anything else (an HTML file, say) is a download.
        let type = file.isImage ? file.contentType : "application/octet-stream"
        return try MediaResponse.response(for: request, reader: reader, contentType: type, name: file.name)
    }

    struct EditPage: Encodable, Sendable {
        let page: PageInfo
        let peer: PersonView
        let id: String
        let text: String
    }

    private func editPage(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await peer(request)
        let id = try messageID(request)
        guard let message = try await messenger.history(with: contact.id, limit: 1000).first(where: { $0.id == id }),
            message.direction == .outgoing, !message.isDeleted
        else { throw Abort(.notFound, reason: "You can edit only messages you sent.") }
        let page = await EditPage(
            page: context.info("Edit a message"), peer: PersonView(contact), id: id.uuidString.lowercased(),
            text: message.text ?? "")
        return try await request.page("chat-edit", page)
    }

    private struct EditForm: Content {
        var text: String
    }

    private func edit(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await peer(request)
        let form = try request.content.decode(EditForm.self)
        try await messenger.edit(try messageID(request), text: form.text)
        return request.redirect(to: "/chat/\(contact.id.uuidString.lowercased())")
    }

    private func delete(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await peer(request)
        try await messenger.deleteForEveryone(try messageID(request))
        return request.redirect(to: "/chat/\(contact.id.uuidString.lowercased())")
    }

    private struct TimerForm: Content {
        var seconds: Int
    }

    private func setTimer(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await peer(request)
        let form = try request.content.decode(TimerForm.self)
        guard Self.timerChoices.contains(form.seconds) else {
            throw Abort(.badRequest, reason: "Choose one of the timers the page offers.")
        }
        try await messenger.setDisappearingTimer(form.seconds == 0 ? nil : form.seconds, with: contact)
        return request.redirect(to: "/chat/\(contact.id.uuidString.lowercased())")
    }

    // MARK: Verification

    struct DeviceNumber: Encodable, Sendable {
        let deviceID: String
        let shortID: String
        let number: String
    }

    struct VerifyPage: Encodable, Sendable {
        let page: PageInfo
        let peer: PersonView
        let state: String
        let stateText: String
        let devices: [DeviceNumber]
    }

    private func verification(_ request: Request, marked: Bool = false) async throws -> Response {
        let (messenger, contact) = try await peer(request)
        let model = await ChatViewModel(messenger: messenger, peer: contact)
        if marked { await model.markVerified() } else { await model.checkVerification() }
        let page = await MainActor.run { () -> VerifyPage in
            let verification = model.verification
            let (state, text): (String, String) =
                switch verification?.state {
                case .verified?: ("verified", "Verified: these are the keys you compared.")
                case .changedSinceVerification?:
                    ("changed", "The keys changed since you verified them. Compare the numbers again.")
                case .unverified?, nil: ("unverified", "Not verified yet.")
                }
            return VerifyPage(
                page: context.info("Verify \(contact.displayName)", error: model.error), peer: PersonView(contact),
                state: state, stateText: text,
                devices: (verification?.safetyNumbers ?? []).map { device, number in
                    DeviceNumber(
                        deviceID: device.uuidString.lowercased(), shortID: String(device.uuidString.prefix(8)),
                        number: number.grouped)
                })
        }
        return try await request.page("verify", page)
    }

    private func markVerified(_ request: Request) async throws -> Response {
        try await verification(request, marked: true)
    }

    /// The safety number with one device as a QR code (SVG), for the peer to scan.
    private func qrCode(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await peer(request)
        guard let name = request.parameters.get("device"), name.hasSuffix(".svg"),
            let device = UUID(uuidString: String(name.dropLast(4)))
        else { throw Abort(.notFound, reason: "There is no such device.") }
        let verification = try await messenger.verification(of: contact)
        guard let number = verification.safetyNumbers.first(where: { $0.deviceID == device })?.number else {
            throw Abort(.notFound, reason: "\(contact.displayName) has no such device now.")
        }
        let code = try QRCode(text: number.digits, correction: .medium)
        return Response(
            status: .ok, headers: ["Content-Type": "image/svg+xml"], body: .init(string: code.svg))
    }
}
