import ConfidantAPI
import ConfidantServer
import ConfidantTestSupport
import Foundation
import OpenAPIRuntime
import Testing

/// The PostgreSQL store of blob bytes (`blob_chunks`) beyond what the route tests cover on both
/// databases: nothing kept of a refused upload, strays swept, files from before still read, and a
/// missing chunk never served as a whole blob.
@Suite("Blob bytes in PostgreSQL")
struct BlobChunkTests {
    private static func chunkRows(_ relay: TestRelay, where condition: String = "TRUE") async throws -> Int {
        let url = try Prerequisite.postgresCluster()
        return try await PostgresAdmin.integer(
            url: url, database: try #require(relay.postgresName),
            "SELECT COUNT(*)::BIGINT FROM blob_chunks WHERE \(condition)")
    }

    private static func execute(_ relay: TestRelay, _ statement: String) async throws {
        let url = try Prerequisite.postgresCluster()
        try await PostgresAdmin.run(url: url, database: try #require(relay.postgresName), statement)
    }

    @Test("an upload refused past the limit part-way leaves no rows behind", arguments: TestDatabaseKind.allCases)
    func refusedUploadLeavesNothing(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind, adjust: { $0.maximumBlobBytes = 3 << 20 }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            // No declared length, so the limit is found only after three chunks were written.
            let pattern = PatternBody(size: 5 << 20)
            let body = HTTPBody(pattern, length: .unknown, iterationBehavior: .single)
            #expect(try await alice.client.uploadBlob(body: .binary(body)).problem == "too_large 413")
            if kind == .postgres { #expect(try await Self.chunkRows(relay) == 0) }
        }
    }

    @Test("maintenance removes the rows of an upload cut off an hour ago, not of one under way")
    func straysSwept() async throws {
        try await TestRelay.run(.postgres) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let kept = try await alice.client.uploadBlob(body: .binary(HTTPBody([UInt8](repeating: 1, count: 10))))
                .created.body.json
            let cutOff = UUID().uuidString
            let underWay = UUID().uuidString
            try await Self.execute(
                relay,
                """
                INSERT INTO blob_chunks (blob_id, sequence, bytes, stored_at) VALUES
                ('\(cutOff)', 0, '\\x00', now() - interval '2 hours'),
                ('\(cutOff)', 1, '\\x01', now() - interval '61 minutes'),
                ('\(underWay)', 0, '\\x00', now() - interval '2 hours'),
                ('\(underWay)', 1, '\\x01', now() - interval '1 minute')
                """)
            let report = try await relay.server.runMaintenance()
            #expect(report.strayBlobs == 1)
            #expect(try await Self.chunkRows(relay, where: "blob_id = '\(cutOff)'") == 0)
            #expect(try await Self.chunkRows(relay, where: "blob_id = '\(underWay)'") == 2)
            #expect(try await Self.chunkRows(relay, where: "blob_id = '\(kept.blobId)'") == 1)
            let path = Operations.DownloadBlob.Input.Path(blobId: kept.blobId)
            #expect(try await alice.client.downloadBlob(path: path).ok.body.binary.digest().size == 10)
        }
    }

    @Test("a blob whose bytes are a file from before the database kept them still downloads, and goes")
    func earlierFileRead() async throws {
        try await TestRelay.run(.postgres) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bytes = [UInt8]((0..<5000).map { UInt8(truncatingIfNeeded: $0) })
            let receipt = try await alice.client.uploadBlob(body: .binary(HTTPBody(bytes))).created.body.json
            // As an upgraded relay has it: the record, the file, no rows.
            try await Self.execute(relay, "DELETE FROM blob_chunks")
            let file = relay.directory.appendingPathComponent("blobs").appendingPathComponent(
                receipt.blobId.lowercased())
            try Data(bytes).write(to: file)
            let path = Operations.DownloadBlob.Input.Path(blobId: receipt.blobId)
            #expect(
                try await [UInt8](collecting: alice.client.downloadBlob(path: path).ok.body.binary, upTo: 1 << 20)
                    == bytes)
            _ = try await alice.client.deleteBlob(path: .init(blobId: receipt.blobId)).noContent
            #expect(!FileManager.default.fileExists(atPath: file.path))
        }
    }

    @Test("a blob with a chunk missing is never served whole")
    func missingChunkFails() async throws {
        try await TestRelay.run(.postgres) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let pattern = PatternBody(size: (3 << 20) + 5)
            let receipt = try await alice.client.uploadBlob(body: .binary(pattern.body)).created.body.json
            #expect(try await Self.chunkRows(relay) == 4)
            try await Self.execute(relay, "DELETE FROM blob_chunks WHERE sequence = 2")
            let path = Operations.DownloadBlob.Input.Path(blobId: receipt.blobId)
            let outcome = try await alice.client.downloadBlob(path: path)
            // Either the download fails, or what came is not the blob; never its digest.
            let digest = try? await outcome.ok.body.binary.digest()
            #expect(digest?.sha256 != pattern.sha256)
            #expect(digest == nil, "a short body must end in an error, not look complete")
        }
    }
}
