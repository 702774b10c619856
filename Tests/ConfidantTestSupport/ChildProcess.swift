import Foundation

/// Runs a program to its end without holding a thread of Swift's cooperative pool.
///
/// The pool has one thread per core: on a two-core machine, two tests that wait for a child
/// synchronously stop every other test in the process, whose waits then time out although
/// nothing is wrong. Here the pipes are read and the exit awaited on threads of their own.
package enum ChildProcess {
    package struct Output: Sendable {
        package let status: Int32
        package let stdout: Data
        package let stderr: Data
        package var text: String { String(decoding: stdout, as: UTF8.self) }
        package var errorText: String { String(decoding: stderr, as: UTF8.self) }
    }

    /// Runs `executable` with `arguments`, writes `stdin` to it, and returns what it printed.
    /// - Parameter mergingStandardError: send the child's standard error to `stdout` as well.
    package static func run(
        _ executable: URL, _ arguments: [String], stdin: Data = Data(), environment: [String: String]? = nil,
        directory: URL? = nil, mergingStandardError: Bool = false
    ) async throws -> Output {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                do {
                    continuation.resume(
                        returning: try runBlocking(
                            executable, arguments, stdin: stdin, environment: environment, directory: directory,
                            mergingStandardError: mergingStandardError))
                } catch {
                    continuation.resume(throwing: error)
                }
            }.start()
        }
    }

    /// Runs a command found on PATH (`/usr/bin/env NAME …`).
    package static func run(
        command: String, _ arguments: [String], stdin: Data = Data(), environment: [String: String]? = nil,
        directory: URL? = nil, mergingStandardError: Bool = false
    ) async throws -> Output {
        try await run(
            URL(fileURLWithPath: "/usr/bin/env"), [command] + arguments, stdin: stdin, environment: environment,
            directory: directory, mergingStandardError: mergingStandardError)
    }

    /// The first line a child writes (up to the newline, or all it wrote before closing), read
    /// on a thread of its own, off the cooperative pool.
    package static func firstLine(of handle: FileHandle) async -> String {
        await withCheckedContinuation { continuation in
            Thread {
                var line = Data()
                while !line.contains(UInt8(ascii: "\n")) {
                    let byte = handle.readData(ofLength: 1)
                    if byte.isEmpty { break }
                    line += byte
                }
                continuation.resume(returning: String(decoding: line, as: UTF8.self))
            }.start()
        }
    }

    /// Runs `executable` and types `lines` into it one at a time, each when its producer returns
    /// (an e-mail code, say, once the server has sent it), then closes its input.
    package static func run(
        _ executable: URL, _ arguments: [String], answering lines: [@Sendable () async throws -> String],
        environment: [String: String]? = nil, directory: URL? = nil
    ) async throws -> Output {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        if let environment { process.environment = environment }
        let input = Pipe()
        let output = Pipe()
        let error = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = error
        signal(SIGPIPE, SIG_IGN)
        try process.run()
        func read(_ pipe: Pipe) async -> Data {
            await withCheckedContinuation { continuation in
                Thread { continuation.resume(returning: pipe.fileHandleForReading.readDataToEndOfFile()) }.start()
            }
        }
        async let stdout = read(output)
        async let stderr = read(error)
        do {
            for line in lines {
                try input.fileHandleForWriting.write(contentsOf: Data((try await line() + "\n").utf8))
            }
        } catch {
            process.terminate()
            _ = await (stdout, stderr)
            throw error
        }
        try? input.fileHandleForWriting.close()
        let (out, err) = await (stdout, stderr)
        await withCheckedContinuation { continuation in
            Thread {
                process.waitUntilExit()
                continuation.resume()
            }.start()
        }
        return Output(status: process.terminationStatus, stdout: out, stderr: err)
    }

    /// Waits on the calling thread: only for threads that are not the cooperative pool's.
    private static func runBlocking(
        _ executable: URL, _ arguments: [String], stdin: Data, environment: [String: String]?, directory: URL?,
        mergingStandardError: Bool
    ) throws -> Output {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        if let environment { process.environment = environment }
        let input = Pipe()
        let output = Pipe()
        let error = mergingStandardError ? output : Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = error
        try process.run()
        // Drain both pipes at once so that a chatty child never blocks on a full pipe.
        let errorData = Locked(Data())
        let errorRead = DispatchSemaphore(value: 0)
        Thread {
            if !mergingStandardError { errorData.value = error.fileHandleForReading.readDataToEndOfFile() }
            errorRead.signal()
        }.start()
        // A child that exits without reading its input closes the pipe: writing must not kill us.
        signal(SIGPIPE, SIG_IGN)
        try? input.fileHandleForWriting.write(contentsOf: stdin)
        try? input.fileHandleForWriting.close()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        errorRead.wait()
        return Output(status: process.terminationStatus, stdout: outputData, stderr: errorData.value)
    }
}

/// A value shared between threads behind a lock.
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    package init(_ value: Value) { stored = value }
    package var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
