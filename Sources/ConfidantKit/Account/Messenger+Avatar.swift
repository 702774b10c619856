import ConfidantAPI
import ConfidantCrypto
import Crypto
import Foundation
import OpenAPIRuntime

/// A profile picture: PNG or JPEG, up to the server's limit (1 MiB by default).
public struct Avatar: Sendable, Equatable {
    /// The image's bytes.
    public let data: Data
    /// `image/png` or `image/jpeg`.
    public let contentType: String

    /// Checks that `data` is a PNG or a JPEG by its signature (the server checks again).
    /// - Throws: `ConfidantKitError.invalidAvatar` for anything else.
    public init(_ data: Data) throws {
        if data.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            contentType = "image/png"
        } else if data.starts(with: [0xFF, 0xD8, 0xFF]) {
            contentType = "image/jpeg"
        } else {
            throw ConfidantKitError.invalidAvatar("it is not a PNG or JPEG image")
        }
        guard data.count <= Self.maximumBytes else {
            throw ConfidantKitError.invalidAvatar("it is \(data.count) bytes; the limit is \(Self.maximumBytes)")
        }
        self.data = data
    }

    /// The largest picture the client sends (the server's default limit).
    public static let maximumBytes = 1024 * 1024
}

extension Messenger {
    /// Sets this account's profile picture, which others see in their lists and chats.
    public func setAvatar(_ avatar: Avatar) async throws {
        let body: Operations.SetAvatar.Input.Body =
            avatar.contentType == "image/png" ? .png(HTTPBody(avatar.data)) : .jpeg(HTTPBody(avatar.data))
        switch try await relay.call({ try await $0.setAvatar(body: body) }) {
        case .noContent: break
        case .default(let status, let response): throw problem(status, response)
        }
    }

    /// A user's profile picture, or nil when they have none. Pictures are kept in the profile's
    /// `avatars/` by their SHA-256, so a contact's picture is fetched again only when its digest
    /// (as the directory last listed it) changes.
    public func avatar(of user: UUID) async throws -> Avatar? {
        let cache = store.attachmentsDirectory.deletingLastPathComponent().appendingPathComponent("avatars")
        if user != me, let digest = try store.contact(id: user)?.avatarDigest,
            let data = try? Data(contentsOf: cache.appendingPathComponent(digest)),
            SHA256.hash(data: data).hexString == digest
        {
            return try Avatar(data)
        }
        switch try await relay.call({ try await $0.getAvatar(path: .init(userId: user.canonicalString)) }) {
        case .ok(let ok):
            let body: HTTPBody =
                switch ok.body {
                case .png(let body): body
                case .jpeg(let body): body
                }
            let avatar = try Avatar(try await Data(collecting: body, upTo: Avatar.maximumBytes))
            try? FileManager.default.createDirectory(
                at: cache, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try? avatar.data.write(to: cache.appendingPathComponent(SHA256.hash(data: avatar.data).hexString))
            return avatar
        case .default(404, _): return nil
        case .default(let status, let response): throw problem(status, response)
        }
    }
}
