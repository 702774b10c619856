import Foundation
import Testing

@testable import ConfidantServer

/// A database write that never answers must not hold the relay's writer for ever.
@Suite("Database deadline")
struct DatabaseDeadlineTests {
    @Test("a write that never answers fails with DatabaseWriteTimeout, classified as database_unavailable")
    func unansweredWriteTimesOut() async throws {
        let never = AsyncStream<Int> { _ in }  // never yields, never finishes
        await #expect(throws: DatabaseWriteTimeout.self) {
            try await DatabaseDeadline.run(seconds: 1) {
                for await value in never { return value }
                return 0
            }
        }
        #expect(DatabaseOutage.classify(DatabaseWriteTimeout(seconds: 1))?.failure.code == .databaseUnavailable)
    }

    @Test("a write that answers in time gives its result, and its error")
    func answeredWritesPassThrough() async throws {
        #expect(try await DatabaseDeadline.run(seconds: 60) { 42 } == 42)
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await DatabaseDeadline.run(seconds: 60) { () async throws -> Int in throw Refused() }
        }
    }
}
