import ConfidantCrypto
import ConfidantAPI
import Fluent
import Foundation
import OpenAPIRuntime
import Vapor

/// Named backup objects: blobs with a per-owner name, readable only by their owner, so a vault
/// backup can find its manifest, catalogue and objects again by name.
extension RelayAPI {
    static func backupName(_ text: String) throws(APIFailure) -> String {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
        guard (1...200).contains(text.count), !text.hasPrefix("."), text.allSatisfy({ allowed.contains($0) }) else {
            throw APIFailure.malformed("A backup object name is 1–200 characters of A–Z, a–z, 0–9, '.', '_' and '-', not starting with '.'.")
        }
        return text
    }

    private func backupObject(named name: String, owner: UUID, on db: any Database) async throws -> BlobRecord? {
        try await BlobRecord.query(on: db).filter(\.$ownerID == owner).filter(\.$backupName == name).first()
    }

    func putBackupObject(_ input: Operations.PutBackupObject.Input) async throws -> Operations.PutBackupObject.Output {
        let (request, caller) = try await signedIn()
        let name = try Self.backupName(input.path.name)
        guard case .binary(let body) = input.body else { throw APIFailure.malformed("Send application/octet-stream.") }
        let stored = try await storeBlobFile(body, limit: context.configuration.maximumBackupObjectBytes, what: "The backup object")
        let record = BlobRecord(id: stored.id, ownerID: caller.userID, size: stored.size, sha256: stored.sha256, createdAt: Date(), backupName: name)
        let replaced: UUID?
        do {
            // The new object replaces the old one in one transaction: a reader sees one or the other.
            replaced = try await context.write(request.db) { db -> UUID? in
                let old = try await backupObject(named: name, owner: caller.userID, on: db)
                if let old { try await old.delete(on: db) }
                try await record.create(on: db)
                return old?.id
            }
        } catch {
            try? FileManager.default.removeItem(at: stored.file)
            if let error = error as? any DatabaseError, error.isConstraintFailure {
                throw APIFailure(.conflict, "Another upload of \(name) finished at the same time; try again.")
            }
            throw error
        }
        if let replaced { try? FileManager.default.removeItem(at: context.blobDirectory.appendingPathComponent(replaced.canonicalString)) }
        return .ok(.init(body: .json(.init(name: name, size: stored.size, sha256: stored.sha256))))
    }

    func getBackupObject(_ input: Operations.GetBackupObject.Input) async throws -> Operations.GetBackupObject.Output {
        let (request, caller) = try await signedIn()
        let name = try Self.backupName(input.path.name)
        guard let blob = try await backupObject(named: name, owner: caller.userID, on: request.db) else { throw APIFailure.notFound("That backup object") }
        return .ok(.init(body: .binary(try blobFileBody(blob))))
    }

    func backupObjectExists(_ input: Operations.BackupObjectExists.Input) async throws -> Operations.BackupObjectExists.Output {
        let (request, caller) = try await signedIn()
        let name = try Self.backupName(input.path.name)
        return try await backupObject(named: name, owner: caller.userID, on: request.db) == nil ? .notFound(.init()) : .ok(.init())
    }

    func deleteBackupObject(_ input: Operations.DeleteBackupObject.Input) async throws -> Operations.DeleteBackupObject.Output {
        let (request, caller) = try await signedIn()
        let name = try Self.backupName(input.path.name)
        let removed = try await context.write(request.db) { db -> UUID? in
            guard let blob = try await backupObject(named: name, owner: caller.userID, on: db) else { return nil }
            try await BlobGrantRecord.query(on: db).filter(\.$blobID == blob.requireID()).delete()
            try await blob.delete(on: db)
            return blob.id
        }
        guard let removed else { throw APIFailure.notFound("That backup object") }
        try? FileManager.default.removeItem(at: context.blobDirectory.appendingPathComponent(removed.canonicalString))
        return .noContent(.init())
    }
}
