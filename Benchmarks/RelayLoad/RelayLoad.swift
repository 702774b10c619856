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

/// `relay-load`: starts a relay as a child process on a free loopback port, signs up
/// sender/receiver pairs, pre-seals every envelope (so sealing is not measured), then sends (over
/// each sender's WebSocket, or one HTTP request per message) while the receivers take delivery
/// over WebSockets and acknowledge. Reports messages per
/// second persisted and delivered, send-to-receive latency, and the server's peak RSS; optionally
/// holds many idle WebSockets and reports the server's RSS with them open.
@main
struct RelayLoad: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay-load",
        abstract: "Load-test the relay: N sender/receiver pairs over HTTP and WebSockets on loopback.",
        discussion: "Benchmarks/relay.sh runs the set reported in docs/BENCHMARKS.md.",
        subcommands: [LoadCommand.self, KitCommand.self, GroupCommand.self, ChildRelayCommand.self, TokenCommand.self],
        defaultSubcommand: LoadCommand.self
    )

    /// `kit` runs its messengers' concurrency where `confidant chat` does (`EventLoopConcurrency`),
    /// unless told `--concurrency pool`; that has to be settled before anything runs.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if let kit = command as? KitCommand, kit.concurrency == .eventLoops { EventLoopConcurrency.install() }
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}

/// The benchmark's own limit on open files: raised to the hard limit, which the relay it starts
/// inherits (the server's defaults are left alone). Says so when even that is too low.
enum OpenFileLimit {
    static func raiseToHardLimit(needing: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        if Int(limit.rlim_max) < needing {
            BenchOutput.progress(
                "the hard limit on open files is \(limit.rlim_max), below the \(needing) this run needs: raise it (ulimit -Hn, as root)"
            )
        }
    }
}

/// What the benchmark's commands print.
enum BenchOutput {
    /// A step, on standard error.
    static func progress(_ text: String) {
        FileHandle.standardError.write(Data("bench: \(text)\n".utf8))
    }

    /// The result: `table`, or one JSON line with `json`.
    static func report(_ result: some Encodable, table: String, json: Bool) throws {
        guard json else { return print(table) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(String(decoding: try encoder.encode(result), as: UTF8.self))
    }
}
