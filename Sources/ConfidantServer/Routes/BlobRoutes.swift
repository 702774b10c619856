import ConfidantAPI
import ConfidantCrypto
import Crypto
import Fluent
import Foundation
import OpenAPIRuntime
import Vapor

extension RelayAPI {
    func uploadBlob(_ input: Operations.UploadBlob.Input) async throws -> Operations.UploadBlob.Output {
        let (request, caller) = try await signedIn()
        guard case .binary(let body) = input.body else { throw APIFailure.malformed("Send application/octet-stream.") }
        let stored = try await storeBlobFile(body, limit: Int64(context.configuration.maximumBlobBytes), what: "The blob")
        let record = BlobRecord(id: stored.id, ownerID: caller.userID, size: stored.size, sha256: stored.sha256, createdAt: Date())
        do {
            try await context.write(request.db) { db in try await record.create(on: db) }
        } catch {
            try? FileManager.default.removeItem(at: stored.file)
            throw error
        }
        return .created(.init(body: .json(.init(blobId: stored.id.canonicalString, size: stored.size, sha256: stored.sha256))))
    }

    func downloadBlob(_ input: Operations.DownloadBlob.Input) async throws -> Operations.DownloadBlob.Output {
        let (request, caller) = try await signedIn()
        let blobID = try Self.uuid(input.path.blobId, "blobId")
        guard let blob = try await BlobRecord.find(blobID, on: request.db) else { throw APIFailure.notFound("That blob") }
        if blob.ownerID != caller.userID {
            // Without a capability granted to this very caller the blob "does not exist".
            guard let capability = input.query.capability,
                  try await BlobGrantRecord.query(on: request.db).filter(\.$blobID == blobID)
                      .filter(\.$capabilityHash == SessionToken.hash(capability)).filter(\.$recipientID == caller.userID).first() != nil
            else { throw APIFailure.notFound("That blob") }
        }
        return .ok(.init(body: .binary(try blobFileBody(blob))))
    }

    func deleteBlob(_ input: Operations.DeleteBlob.Input) async throws -> Operations.DeleteBlob.Output {
        let (request, caller) = try await signedIn()
        let blobID = try Self.uuid(input.path.blobId, "blobId")
        try await context.write(request.db) { db in
            guard let blob = try await BlobRecord.find(blobID, on: db), blob.ownerID == caller.userID else { throw APIFailure.notFound("That blob") }
            try await BlobGrantRecord.query(on: db).filter(\.$blobID == blobID).delete()
            try await blob.delete(on: db)
        }
        try? FileManager.default.removeItem(at: context.blobDirectory.appendingPathComponent(blobID.canonicalString))
        return .noContent(.init())
    }

    func grantBlob(_ input: Operations.GrantBlob.Input) async throws -> Operations.GrantBlob.Output {
        let (request, caller) = try await signedIn()
        let blobID = try Self.uuid(input.path.blobId, "blobId")
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let recipientID = try Self.uuid(body.recipientUserId, "recipientUserId")
        let capability = SessionToken.generate()
        try await context.write(request.db) { db in
            guard let blob = try await BlobRecord.find(blobID, on: db), blob.ownerID == caller.userID else { throw APIFailure.notFound("That blob") }
            guard try await UserRecord.find(recipientID, on: db) != nil else { throw APIFailure.notFound("That recipient") }
            try await BlobGrantRecord(blobID: blobID, recipientID: recipientID, capabilityHash: capability.hash, createdAt: Date()).create(on: db)
        }
        return .created(.init(body: .json(.init(capability: capability.text, recipientUserId: body.recipientUserId))))
    }
}
