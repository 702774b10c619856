import ConfidantCrypto
import ConfidantKit
import ConfidantVault
import Foundation
import Vapor

/// The vault's photos and videos: one photo at a time in a viewer, and any file decrypted as it
/// is sent (the whole file, or the range a player asks for).
struct VaultMediaPages {
    let context: AppContext

    func register(on routes: any RoutesBuilder) {
        routes.get(.vaultMedia(.key)) { request in try await media(request) }
        routes.get(.vaultPhoto(.key)) { request in try await photo(request) }
    }

    struct PhotoPage: Encodable, Sendable {
        let page: PageInfo
        let id: String
        let name: String
        let chapter: String
        let date: String
        let text: String?
        let position: Int
        let count: Int
        let media: String
        /// The photos before and after it in the timeline's order, as links.
        let previous: String?
        let next: String?
    }

    /// One photo at a time, in timeline order, with the previous and next photo a link (and an
    /// arrow key) away.
    private func photo(_ request: Request) async throws -> Response {
        guard let id = request.uuid(.file) else { throw Abort(.notFound, reason: "There is no such photo.") }
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
                page: context.info(file.name), id: id.canonicalString, name: file.name, chapter: item.chapterTitle,
                date: item.timestamp.formatted(date: .long, time: .omitted), text: item.text, position: index + 1,
                count: photos.count, media: AppRoute.vaultMedia(.value(id)).path,
                previous: index > 0 ? AppRoute.vaultPhoto(.value(photos[index - 1].file.id)).path : nil,
                next: index + 1 < photos.count ? AppRoute.vaultPhoto(.value(photos[index + 1].file.id)).path : nil)
        }
        return try await request.page("vault-photo", page)
    }

    /// A photo or video, decrypted as it is sent: the whole file, or the one byte range asked
    /// for (206), a segment at a time.
    private func media(_ request: Request) async throws -> Response {
        guard let id = request.uuid(.file) else { throw Abort(.notFound, reason: "There is no such file.") }
        let model = context.session.vault
        let (file, reader) = try await MainActor.run { try model.media(id) }
        return try MediaResponse.response(for: request, reader: reader, contentType: file.contentType, name: file.name)
    }
}
