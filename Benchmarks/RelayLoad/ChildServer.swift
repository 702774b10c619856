import ArgumentParser
import AsyncHTTPClient
import ConfidantAPI
import ConfidantCrypto
import ConfidantKit
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import Synchronization
import WebSocketKit

/// This benchmark run as `relay-load child-relay`, a child process, so that the server's memory
/// and CPU time are its own.
final class ChildServer: Sendable {
    private let process: Process
    private let output: Pipe
    /// Held open while this process lives (see `init`).
    private let input: Pipe

    init(dataDirectory: URL, database: String?) throws {
        let process = Process()
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var arguments = ["child-relay", "--data-dir", dataDirectory.path]
        // A profiler to run the relay under (e.g. `heaptrack`), for a diagnosis: the CPU and
        // memory figures are then the profiler's process's, not the relay's.
        if let wrapper = ProcessInfo.processInfo.environment["CONFIDANT_BENCH_SERVER_WRAPPER"], !wrapper.isEmpty {
            process.executableURL = URL(fileURLWithPath: wrapper)
            arguments.insert(executable.path, at: 0)
        } else {
            process.executableURL = executable
        }
        if let database { arguments += ["--database", database] }
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        // The child's standard input: only this process holds its writing end, so the child
        // reads its end when this process ends, however it ends (killed, or a crash), and stops
        // itself (`ChildRelayCommand.exitWithParentVariable`): a relay left behind took CPU from
        // the measurements that followed. An environment variable, not an option, so that an
        // older build run through the wrapper still starts.
        let input = Pipe()
        process.standardInput = input
        var environment = ProcessInfo.processInfo.environment
        environment[ChildRelayCommand.exitWithParentVariable] = "1"
        process.environment = environment
        try process.run()
        self.process = process
        self.output = output
        self.input = input
    }

    func waitForPort() throws -> Int {
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            guard !byte.isEmpty else { throw ValidationError("The child relay exited before it listened.") }
            line += byte
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: "127.0.0.1:"),
            let port = Int(text[range.upperBound...].prefix(while: \.isNumber))
        else {
            throw ValidationError("Unexpected first line from the child relay: \(text)")
        }
        return port
    }

    /// The server's CPU time by kind of thread, from /proc: its write connection's thread (NIO's
    /// thread pool of one, "TP-#0": the one stage every send and acknowledgement passes, so the
    /// rate it can keep up bounds the relay's), its event loops ("NIO-…"), and all the others.
    func threadCPUSeconds() -> (writer: Double, eventLoops: Double, other: Double) {
        let task = "/proc/\(process.processIdentifier)/task"
        var result = (writer: 0.0, eventLoops: 0.0, other: 0.0)
        for thread in (try? FileManager.default.contentsOfDirectory(atPath: task)) ?? [] {
            guard let stat = try? String(contentsOfFile: "\(task)/\(thread)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
            else { continue }
            let name = stat[stat.index(after: open)..<close]
            let seconds = Self.cpuSeconds(stat: stat, after: close)
            if name == "TP-#0" {
                result.writer += seconds
            } else if name.hasPrefix("NIO-") {
                result.eventLoops += seconds
            } else {
                result.other += seconds
            }
        }
        return result
    }

    /// utime + stime of a `stat` line whose command name ends at `close`.
    private static func cpuSeconds(stat: String, after close: String.Index) -> Double {
        // Fields after the command name: state is field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// User plus system CPU time the server has used, from /proc.
    func cpuSeconds() -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        return Self.cpuSeconds(stat: stat, after: close)
    }

    /// User plus system CPU time this process (the generator) has used.
    static func ownCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// Context switches of this process's threads, voluntary (a thread waiting) and involuntary
    /// (preempted), those of threads that ended included.
    static func ownContextSwitches() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_nvcsw + usage.ru_nivcsw
    }

    /// Current and peak resident memory in bytes, from /proc.
    func memory() -> (current: Int, peak: Int) {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        else { return (0, 0) }
        func kilobytes(_ key: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else { return 0 }
            return (Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0)
                * 1024
        }
        return (kilobytes("VmRSS:"), kilobytes("VmHWM:"))
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}

/// A mutex that closures can share (a `Mutex` itself cannot be captured by escaping closures).
final class LockedBox<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: sending Value) { mutex = Mutex(value) }

    func withLock<Result>(_ body: (inout sending Value) throws -> sending Result) rethrows -> sending Result {
        try mutex.withLock(body)
    }
}
