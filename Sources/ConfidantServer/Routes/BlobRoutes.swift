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
        let limit = context.configuration.maximumBlobBytes
        if case .known(let length) = body.length, length > limit { throw APIFailure.tooLarge("The blob", limit: limit) }
        let id = UUID()
        let final = context.blobDirectory.appendingPathComponent(id.uuidString.lowercased())
        let partial = context.blobDirectory.appendingPathComponent(".\(id.uuidString.lowercased()).partial")
        guard FileManager.default.createFile(atPath: partial.path, contents: nil), let handle = try? FileHandle(forWritingTo: partial) else {
            throw APIFailure(.internalServerError, "storage_unavailable", "The server cannot write blobs now; try again later.")
        }
        var hasher = SHA256()
        var size = 0
        do {
            defer { try? handle.close() }
            for try await chunk in body {
                size += chunk.count
                guard size <= limit else { throw APIFailure.tooLarge("The blob", limit: limit) }
                hasher.update(data: chunk)
                try handle.write(contentsOf: chunk)
            }
            try handle.synchronize()
            try FileManager.default.moveItem(at: partial, to: final)
        } catch {
            try? FileManager.default.removeItem(at: partial)
            throw error
        }
        let digest = hasher.finalize().hexString
        let record = BlobRecord(id: id, ownerID: caller.userID, size: Int64(size), sha256: digest, createdAt: Date())
        do {
            try await context.write(request.db) { db in try await record.create(on: db) }
        } catch {
            try? FileManager.default.removeItem(at: final)
            throw error
        }
        return .created(.init(body: .json(.init(blobId: id.uuidString.lowercased(), size: Int64(size), sha256: digest))))
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
        let url = context.blobDirectory.appendingPathComponent(blobID.uuidString.lowercased())
        guard let handle = try? FileHandle(forReadingFrom: url) else {
            throw APIFailure(.internalServerError, "storage_unavailable", "The blob's bytes are missing on the server.")
        }
        let chunks = AsyncThrowingStream<ArraySlice<UInt8>, any Error> { continuation in
            let reader = Task {
                defer { try? handle.close() }
                do {
                    while !Task.isCancelled, let data = try handle.read(upToCount: 64 * 1024), !data.isEmpty {
                        continuation.yield(ArraySlice(data))
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in reader.cancel() }
        }
        return .ok(.init(body: .binary(HTTPBody(chunks, length: .known(blob.size), iterationBehavior: .single))))
    }

    func deleteBlob(_ input: Operations.DeleteBlob.Input) async throws -> Operations.DeleteBlob.Output {
        let (request, caller) = try await signedIn()
        let blobID = try Self.uuid(input.path.blobId, "blobId")
        try await context.write(request.db) { db in
            guard let blob = try await BlobRecord.find(blobID, on: db), blob.ownerID == caller.userID else { throw APIFailure.notFound("That blob") }
            try await BlobGrantRecord.query(on: db).filter(\.$blobID == blobID).delete()
            try await blob.delete(on: db)
        }
        try? FileManager.default.removeItem(at: context.blobDirectory.appendingPathComponent(blobID.uuidString.lowercased()))
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
