import ConfidantTestSupport
import Foundation
import Logging
import Testing

@testable import ConfidantServer

@Suite("Request bodies that come too slowly or are not valid HTTP")
struct RequestBodyPaceTests {
    // Vapor keeps the connection itself (it gives no way to close it from a response), so what is
    // tested is that the request is answered and lets go of its handler, upload slot and file.
    @Test("a stalled JSON body and stalled uploads are answered 408; nothing is left behind")
    func stalledBodies() async throws {
        try await TestRelay.run(adjust: {
            $0.requestBodySeconds = 1
            $0.minimumUploadBytesPerSecond = 1024
        }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            func stall(_ method: String, _ path: String, _ type: String, declared: Int, sent: Int) async throws
                -> String
            {
                try await PythonScript.run(
                    "http_abuse.py",
                    ["stall", "\(relay.port)", alice.token, method, path, type, "\(declared)", "\(sent)", "60"])
            }
            let json = try await stall("PATCH", "/v1/account", "application/json", declared: 100, sent: 5)
            #expect(json.hasPrefix("HTTP/1.1 408 Request Timeout | request_timeout"), "\(json)")
            for (method, path) in [("POST", "/v1/blobs"), ("PUT", "/v1/backup/objects/stalled")] {
                let upload = try await stall(method, path, "application/octet-stream", declared: 1 << 20, sent: 10)
                #expect(upload.hasPrefix("HTTP/1.1 408 Request Timeout | request_timeout"), "\(upload)")
            }
            // The stalled uploads left no file and hold no upload slot: four at once still go.
            let blobs = relay.directory.appendingPathComponent("blobs")
            #expect(try FileManager.default.contentsOfDirectory(atPath: blobs.path).isEmpty)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<UploadReservations.maximumPerAccount {
                    let client = alice.client
                    group.addTask {
                        let bytes = [UInt8](repeating: UInt8(index), count: 200_000)
                        _ = try await client.uploadBlob(body: .binary(.init(bytes))).created
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test("a body that is not valid HTTP/1.1 is refused as the client's mistake, never logged as an error")
    func invalidChunk() async throws {
        let recorder = LogRecorder()
        try await TestRelay.run(logger: recorder.logger()) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let answer = try await PythonScript.run("http_abuse.py", ["bad-chunk", "\(relay.port)", alice.token])
            // NIO's HTTP pipeline closes such a connection before any answer can be written.
            #expect(answer == "closed without an answer", "\(answer)")
            _ = try await alice.client.currentAccount().ok  // the relay goes on
        }
        let errors = recorder.logged.filter { $0.level >= .error }.map(\.message)
        #expect(errors.isEmpty, "\(errors)")
        #expect(recorder.logged.contains { $0.level == .info && $0.message.contains("not valid HTTP") })
    }
}
