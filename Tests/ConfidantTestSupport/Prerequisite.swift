import Foundation
import Testing

/// What a test needs from the machine (PostgreSQL, root for a tmpfs): when it is missing, the test
/// ends as skipped with the reason instead of passing. Each one is also written to the file
/// `CONFIDANT_TEST_UNTESTED` names (Swift Testing prints a cancelled test case only when verbose),
/// which `Tests/run.sh` lists at the end; under `CI=true` the run then fails.
package enum Prerequisite {
    /// Ends the running test (or test case) as skipped because `what` is missing.
    package static func missing(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Never {
        record("\(Test.current?.displayName ?? Test.current?.name ?? "a test"): \(what)")
        try Test.cancel("NOT TESTED: \(what)", sourceLocation: sourceLocation)
    }

    /// The PostgreSQL cluster `Tests/run.sh` started, or the test ends as skipped.
    package static func postgresCluster(sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        guard let url = TestDatabaseKind.postgresURL else {
            try missing("no PostgreSQL cluster (Tests/run.sh starts one)", sourceLocation: sourceLocation)
        }
        return url
    }

    /// Appends one line (one `write` on a file opened to append, so lines from tests running at
    /// once do not mix).
    private static func record(_ line: String) {
        guard let path = ProcessInfo.processInfo.environment["CONFIDANT_TEST_UNTESTED"],
            let handle = FileHandle(forWritingAtPath: path)
        else { return }
        defer { try? handle.close() }
        _ = try? handle.seekToEnd()
        try? handle.write(contentsOf: Data((line.replacingOccurrences(of: "\n", with: " ") + "\n").utf8))
    }
}
