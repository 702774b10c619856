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

/// How the benchmark's senders send.
enum SendTransport: String, ExpressibleByArgument, Sendable {
    case stream
    case jsonStream = "json-stream"
    case http
}

/// How a stream's envelopes (`/v1/stream?deliveries=`) or receipts (`receipts=`) come.
enum DeliveryForm: String, ExpressibleByArgument, Sendable {
    case binary
    case json
}

/// A send as it goes over the stream, encoded before the clock starts.
enum BenchSendFrame: Sendable {
    /// A `StreamRequest` in JSON.
    case text(String)
    /// A `StreamSendFrame`.
    case binary(Data)
}

struct BenchResult: Codable {
    let database: String
    let transport: String
    /// How receivers took envelopes (`binary` or `json`).
    let deliveries: String
    /// How stream senders took their receipts (`binary` or `json`); nil over HTTP.
    let receipts: String?
    let pairs: Int
    let messages: Int
    let targetRate: Double?
    let persistedPerSecond: Double
    let deliveredPerSecond: Double
    let p50Milliseconds: Double
    let p99Milliseconds: Double
    let maxMilliseconds: Double
    /// CPU time (user + system) per message: steadier than rates on a machine whose speed varies.
    let serverCPUMicrosecondsPerMessage: Double
    /// Of it, the write connection's thread's and the event loops' (`ChildServer.threadCPUSeconds`).
    let writerCPUMicrosecondsPerMessage: Double
    let eventLoopCPUMicrosecondsPerMessage: Double
    let generatorCPUMicrosecondsPerMessage: Double
    let serverPeakRSSMiB: Double
    let idleConnections: Int
    let serverRSSWithIdleMiB: Double?
    /// Sent and never delivered; delivered more than once. Both must be 0.
    let lost: Int
    let duplicated: Int

    var table: String {
        var lines = [
            "database            \(database)",
            "sending over        \(transport)",
            "deliveries          \(deliveries)",
            "receipts            \(receipts ?? "HTTP responses")",
            "pairs               \(pairs)",
            "messages            \(messages)" + (targetRate.map { " at a target of \(Int($0))/s" } ?? " (open loop)"),
            "persisted           \(Int(persistedPerSecond)) messages/s",
            "delivered           \(Int(deliveredPerSecond)) messages/s",
            String(
                format: "latency p50/p99/max %.1f / %.1f / %.1f ms", p50Milliseconds, p99Milliseconds, maxMilliseconds),
            String(
                format: "CPU per message     server %.0f µs (write thread %.0f, event loops %.0f), generator %.0f µs",
                serverCPUMicrosecondsPerMessage, writerCPUMicrosecondsPerMessage, eventLoopCPUMicrosecondsPerMessage,
                generatorCPUMicrosecondsPerMessage),
            String(format: "server peak RSS     %.0f MiB", serverPeakRSSMiB),
            "lost / duplicated   \(lost) / \(duplicated)",
        ]
        if let serverRSSWithIdleMiB {
            lines.append(
                String(format: "server RSS with %d idle WebSockets: %.0f MiB", idleConnections, serverRSSWithIdleMiB))
        }
        return lines.joined(separator: "\n")
    }
}
