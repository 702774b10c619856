import ConfidantAPI
import Foundation
import OpenAPIRuntime
import Vapor

/// The HTTP API: implements the operations that swift-openapi-generator generated from
/// ConfidantAPI's `openapi.yaml`, one file per area. Each handler decodes its input, authorizes
/// the caller, calls one service, and maps the result to the wire.
struct RelayAPI: APIProtocol {
    let services: RelayServices

    func health(_ input: Operations.Health.Input) async throws -> Operations.Health.Output {
        try await services.database.ping()
        return .ok(
            .init(
                body: .json(
                    .init(
                        status: "ok", database: services.database.engine.rawValue,
                        maximumBlobBytes: Int64(services.configuration.maximumBlobBytes)))))
    }
}

extension RelayAPI {
    /// The free space below which the relay stops being ready: a fraction of the floor that
    /// attachments keep, what messages may still use.
    static let messageReserve: Int64 = 8 << 20

    func ready(_ input: Operations.Ready.Input) async throws -> Operations.Ready.Output {
        try await services.database.ping()
        let space = DiskSpace(directory: services.configuration.dataDirectory, floor: Self.messageReserve)
        if let available = space.available(), available < Self.messageReserve {
            throw APIFailure(
                .storageUnavailable, "The server's disk is full (\(available >> 10) KiB free); writes fail.",
                retryAfter: 60)
        }
        if let outage = services.outages.recent(within: .seconds(10)) { throw outage.failure }
        return .ok(
            .init(
                body: .json(
                    .init(
                        status: "ready", database: services.database.engine.rawValue,
                        maximumBlobBytes: Int64(services.configuration.maximumBlobBytes)))))
    }

    /// The current request, for its headers and peer address.
    func request() throws -> Request { try RequestContextMiddleware.request() }

    /// The request's authenticated caller (`SessionMiddleware` checked the token).
    func caller() throws -> Caller {
        guard let caller = try request().storage[CallerKey.self] else { throw APIFailure.unauthenticated }
        return caller
    }

    /// The caller's network address, for per-address limits.
    func clientAddress() throws -> String {
        try request().clientAddress(trustedProxies: services.configuration.trustedProxies)
    }

    /// A page size as asked (`default` when absent), refused outside 1…`maximum` rather than
    /// quietly changed, as the API document states.
    static func limit(_ value: Int?, default defaultValue: Int, maximum: Int) throws(APIFailure) -> Int {
        guard let value else { return defaultValue }
        guard (1...maximum).contains(value) else {
            throw APIFailure.malformed("`limit` must be between 1 and \(maximum).")
        }
        return value
    }

    static func uuid(_ text: String, _ name: String) throws(APIFailure) -> UUID {
        guard let value = UUID(hyphenatedHex: text) else { throw APIFailure.malformed("`\(name)` is not a UUID.") }
        return value
    }
}
