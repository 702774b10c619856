import ConfidantAPI
import Foundation
import OpenAPIRuntime

/// Hands one sealed batch to the relay: over the live stream when connected, else one HTTP
/// request. Both answer with the relay's receipt or its refusal, and both are idempotent on the
/// message id, so a retry never stores twice.
struct BatchTransport: Sendable {
    let relay: RelayClient
    let store: LocalStore
    let stream: StreamSender
    let diagnostics: DeliveryDiagnostics?

    func transmit(_ batch: Components.Schemas.MessageBatch) async throws {
        // What another process on the profile wrote of the sessions is on disk before envelopes
        // sealed with them leave (`LocalStore.syncBeforeSending`).
        try await store.syncBeforeSending()
        do {
            _ = try await stream.send(batch)
            diagnostics?.update { $0.transports.append(.stream) }
            return
        } catch is StreamSender.Unavailable {
            // Not connected, or the connection dropped: HTTP, which is idempotent on the message id.
        }
        switch try await relay.call({ try await $0.sendMessage(body: .json(batch)) }) {
        case .ok: diagnostics?.update { $0.transports.append(.http) }
        case .default(let status, let response): throw problem(status, response)
        }
    }

    /// Hands one group envelope for many devices to the relay, over the stream when connected
    /// to a relay that takes shared frames, else `POST /v1/messages/shared`.
    func transmitShared(_ frame: SharedSendFrame, messageID: UUID) async throws {
        try await store.syncBeforeSending()
        do {
            _ = try await stream.sendShared(frame, messageID: messageID)
            diagnostics?.update { $0.transports.append(.stream) }
            return
        } catch is StreamSender.Unavailable {
            // As `transmit`: HTTP, idempotent on the message id.
        }
        let body = HTTPBody(frame.serialized())
        switch try await relay.call({ try await $0.sendSharedMessage(body: .binary(body)) }) {
        case .ok: diagnostics?.update { $0.transports.append(.http) }
        case .default(let status, let response): throw problem(status, response)
        }
    }
}
