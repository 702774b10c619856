import ConfidantAPI
import ConfidantCrypto
import Foundation

/// Encrypted attachments and named backup objects.
extension RelayAPI {
    func uploadBlob(_ input: Operations.UploadBlob.Input) async throws -> Operations.UploadBlob.Output {
        let caller = try caller()
        guard case .binary(let body) = input.body else { throw APIFailure.malformed("Send application/octet-stream.") }
        let stored = try await services.blobs.upload(body, by: caller.userID)
        return .created(
            .init(body: .json(.init(blobId: stored.id.canonicalString, size: stored.size, sha256: stored.sha256))))
    }

    func downloadBlob(_ input: Operations.DownloadBlob.Input) async throws -> Operations.DownloadBlob.Output {
        let caller = try caller()
        let body = try await services.blobs.download(
            try Self.uuid(input.path.blobId, "blobId"), by: caller.userID,
            capability: input.query.capability)
        return .ok(.init(body: .binary(body)))
    }

    func deleteBlob(_ input: Operations.DeleteBlob.Input) async throws -> Operations.DeleteBlob.Output {
        let caller = try caller()
        try await services.blobs.delete(try Self.uuid(input.path.blobId, "blobId"), by: caller.userID)
        return .noContent(.init())
    }

    func confirmBlobFetched(_ input: Operations.ConfirmBlobFetched.Input) async throws
        -> Operations.ConfirmBlobFetched.Output
    {
        let caller = try caller()
        try await services.blobs.fetched(
            try Self.uuid(input.path.blobId, "blobId"), by: caller, capability: input.query.capability)
        return .noContent(.init())
    }

    func grantBlob(_ input: Operations.GrantBlob.Input) async throws -> Operations.GrantBlob.Output {
        let caller = try caller()
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let capability = try await services.blobs.grant(
            try Self.uuid(input.path.blobId, "blobId"), by: caller,
            to: try Self.uuid(body.recipientUserId, "recipientUserId"))
        return .created(.init(body: .json(.init(capability: capability.text, recipientUserId: body.recipientUserId))))
    }

    func putBackupObject(_ input: Operations.PutBackupObject.Input) async throws -> Operations.PutBackupObject.Output {
        let caller = try caller()
        let name = try BackupObjectService.name(input.path.name)
        guard case .binary(let body) = input.body else { throw APIFailure.malformed("Send application/octet-stream.") }
        let stored = try await services.backups.put(body, name: name, owner: caller.userID)
        return .ok(.init(body: .json(.init(name: name, size: stored.size, sha256: stored.sha256))))
    }

    func listBackupObjects(_ input: Operations.ListBackupObjects.Input) async throws
        -> Operations.ListBackupObjects.Output
    {
        let caller = try caller()
        let query = input.query
        let prefix = try query.prefix.map { $0.isEmpty ? "" : try BackupObjectService.name($0) } ?? ""
        let after = try query.after.flatMap { $0.isEmpty ? nil : try BackupObjectService.name($0) }
        let limit = try Self.limit(query.limit, default: 100, maximum: 1000)
        let page = try await services.backups.list(prefix: prefix, after: after, limit: limit, owner: caller.userID)
        return .ok(
            .init(
                body: .json(
                    .init(
                        objects: page.objects.map {
                            .init(name: $0.backupName ?? "", size: $0.size, sha256: $0.sha256)
                        },
                        hasMore: page.hasMore))))
    }

    func getBackupObject(_ input: Operations.GetBackupObject.Input) async throws -> Operations.GetBackupObject.Output {
        let caller = try caller()
        return .ok(
            .init(
                body: .binary(
                    try await services.backups.get(try BackupObjectService.name(input.path.name), owner: caller.userID))
            ))
    }

    func backupObjectExists(_ input: Operations.BackupObjectExists.Input) async throws
        -> Operations.BackupObjectExists.Output
    {
        let caller = try caller()
        return try await services.backups.exists(try BackupObjectService.name(input.path.name), owner: caller.userID)
            ? .ok(.init()) : .notFound(.init())
    }

    func deleteBackupObject(_ input: Operations.DeleteBackupObject.Input) async throws
        -> Operations.DeleteBackupObject.Output
    {
        let caller = try caller()
        try await services.backups.delete(try BackupObjectService.name(input.path.name), owner: caller.userID)
        return .noContent(.init())
    }
}
