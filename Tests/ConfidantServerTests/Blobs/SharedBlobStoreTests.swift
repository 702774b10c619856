import ConfidantAPI
import ConfidantTestSupport
import Foundation
import OpenAPIRuntime
import Testing

@Suite("Blobs shared by instances on one PostgreSQL")
struct SharedBlobStoreTests {
    @Test(
        "a blob stored through one instance downloads byte-identical through the other, and goes through either"
    )
    func attachmentAcrossInstances() async throws {
        let cluster = try Prerequisite.postgresCluster()
        try await TwoInstances.run(in: cluster) { relayA, relayB in
            let alice = try await TestUser.make(relayA, name: "alice")
            let bob = try await TestUser.make(relayB, name: "bob")
            // Three chunks and a bit: the boundaries are where a chunked store goes wrong.
            let bytes = (0..<(3 << 20) + 17).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
            let receipt = try await alice.client.uploadBlob(body: .binary(HTTPBody(bytes))).created.body.json
            let grant = try await alice.client.grantBlob(
                path: .init(blobId: receipt.blobId), body: .json(.init(recipientUserId: bob.id.uuidString))
            ).created.body.json
            let path = Operations.DownloadBlob.Input.Path(blobId: receipt.blobId)
            let viaB = try await bob.client.downloadBlob(path: path, query: .init(capability: grant.capability)).ok
                .body.binary
            #expect(try await [UInt8](collecting: viaB, upTo: 8 << 20) == bytes)

            // Deleted through B, gone through A; neither instance kept a file of it.
            let aliceOnB = relayB.client(token: alice.token)
            _ = try await aliceOnB.deleteBlob(path: .init(blobId: receipt.blobId)).noContent
            #expect(try await alice.client.downloadBlob(path: path).problem == "not_found 404")
            for relay in [relayA, relayB] {
                let files = try FileManager.default.contentsOfDirectory(
                    atPath: relay.dataDirectory.appendingPathComponent("blobs").path)
                #expect(files.isEmpty, "bytes in the database, not in \(relay.dataDirectory.path)")
            }
        }
    }

    @Test("a 200 MiB backup object streams through each instance with flat memory")
    func largeObjectFlatMemory() async throws {
        let cluster = try Prerequisite.postgresCluster()
        try await TwoInstances.run(in: cluster) { relayA, relayB in
            let alice = try await TestUser.make(relayA, name: "alice")
            let pattern = PatternBody(size: 200 << 20)
            let expected = pattern.sha256
            let memoryA = ProcessMemory(relayA.processID)
            let memoryB = ProcessMemory(relayB.processID)

            try memoryA.resetPeak()
            let before = try memoryA.resident()
            let stored = try await alice.client.putBackupObject(path: .init(name: "large"), body: .binary(pattern.body))
                .ok.body.json
            let uploadGrowth = try memoryA.peak() - before
            #expect(stored.sha256 == expected)
            #expect(stored.size == 200 << 20)

            try memoryB.resetPeak()
            let beforeB = try memoryB.resident()
            let body = try await relayB.client(token: alice.token).getBackupObject(path: .init(name: "large")).ok.body
                .binary
            let (sha256, size) = try await body.digest()
            let downloadGrowth = try memoryB.peak() - beforeB
            #expect(sha256 == expected)
            #expect(size == 200 << 20)
            // Two chunks of 1 MiB per transfer, plus what the HTTP and database layers buffer: a
            // store that held the object would grow by 200 MiB or more.
            #expect(uploadGrowth < 48 << 20, "upload grew instance A by \(uploadGrowth >> 20) MiB")
            #expect(downloadGrowth < 48 << 20, "download grew instance B by \(downloadGrowth >> 20) MiB")
        }
    }
}
