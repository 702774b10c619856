import Fluent
import Foundation
import Prometheus
import SQLKit
import Synchronization

/// The relay's Prometheus metrics (`GET /metrics` on the metrics listener, `MetricsListener`):
/// requests by route pattern, method and status with their latency, and, read when scraped,
/// what the relay holds — accounts, devices, mailbox entries waiting, blob bytes, open streams,
/// entries stored since start, free disk. Labels are route patterns (`/v1/devices/:`), never a
/// path's values, so their number is bounded and no id or token appears.
final class RelayMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    /// Request latency buckets, 1 ms to 10 s.
    static let latencyBuckets: [Duration] = [1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000].map {
        .microseconds(Int64($0 * 1_000))
    }
    /// Entries this instance stored, as `MailboxHub` counts them: what the counter has reported.
    private let reportedStored = Mutex<UInt64>(0)

    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "confidant", metricName: metric, unitName: unit, helpText: help)
    }

    private static var requests: MetricNameDescriptor {
        name("http_requests", "total", "HTTP requests answered, by route pattern, method and status.")
    }
    private static var latency: MetricNameDescriptor {
        name("http_request_duration", "seconds", "Time to answer a request, by route pattern and method.")
    }

    /// Records one answered request.
    func answered(route: String, method: String, status: UInt, after duration: Duration) {
        registry.makeCounter(
            descriptor: Self.requests, labels: [("route", route), ("method", method), ("status", String(status))]
        ).increment()
        registry.makeDurationHistogram(
            descriptor: Self.latency, labels: [("route", route), ("method", method)], buckets: Self.latencyBuckets
        ).record(duration)
    }

    /// Counts what a maintenance run removed, by kind.
    func maintained(_ report: MaintenanceReport) {
        for (kind, count) in report.byKind {
            registry.makeCounter(
                descriptor: Self.name(
                    "maintenance_removed", "total", "Records the hourly maintenance removed, by kind, since start."),
                labels: [("kind", kind)]
            ).increment(by: Int64(count))
        }
    }

    /// The exposition text, with the gauges read now from the database, the hub and the disk.
    func scrape(database: RelayDatabase, hub: MailboxHub, configuration: ServerConfiguration) async throws -> [UInt8] {
        let sql = try database.sql
        func count(_ query: String) async throws -> Double {
            Double(try await sql.raw(SQLQueryString(query)).first()?.decode(column: "n", as: Int64.self) ?? 0)
        }
        let gauges: [(String, String, String, Double)] = [
            ("accounts", "", "Accounts, verified or not.", try await count("SELECT COUNT(*) AS n FROM users")),
            (
                "devices", "", "Current devices (keys not retired).",
                try await count("SELECT COUNT(*) AS n FROM devices WHERE retired_at IS NULL")
            ),
            (
                "mailbox_entries_waiting", "", "Mailbox entries not yet acknowledged by their device.",
                try await count("SELECT COUNT(*) AS n FROM mailbox")
            ),
            (
                "blob_bytes", "", "Bytes of attachments and backup objects stored.",
                Double(try await BlobService.storedBytes(on: sql))
            ),
            (
                "streams_open", "", "Mailbox streams open on this instance.",
                Double(hub.streamTasks.load(ordering: .relaxed))
            ),
            (
                "disk_free", "bytes", "Bytes the data directory's disk can still take.",
                Double(configuration.freeSpace(configuration.dataDirectory) ?? -1)
            ),
        ]
        for (metric, unit, help, value) in gauges {
            registry.makeGauge(descriptor: Self.name(metric, unit, help)).set(to: value)
        }
        let stored = hub.storedEntries
        let delta = reportedStored.withLock { reported -> UInt64 in
            defer { reported = max(reported, stored) }
            return stored > reported ? stored - reported : 0
        }
        registry.makeCounter(
            descriptor: Self.name(
                "mailbox_entries_stored", "total", "Mailbox entries this instance stored since it started.")
        ).increment(by: Int64(clamping: delta))
        return registry.emitToBuffer()
    }
}
