import ConfidantAPI
import Foundation

/// Sending, fetching and acknowledging mailbox entries, and recent conversations. The stream
/// (`MailboxStream`) calls the same `MailboxService`.
extension RelayAPI {
    func sendMessage(_ input: Operations.SendMessage.Input) async throws -> Operations.SendMessage.Output {
        let caller = try caller()
        guard case .json(let batch) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let submission = try MailboxSubmission(
            batch, from: caller.address, maximumEnvelopeBytes: services.configuration.maximumEnvelopeBytes)
        let receipt = try await services.mailbox.send(submission)
        return .ok(.init(body: .json(receipt.wire(messageID: batch.messageId))))
    }

    func sendSharedMessage(_ input: Operations.SendSharedMessage.Input) async throws
        -> Operations.SendSharedMessage.Output
    {
        let caller = try caller()
        guard case .binary(let body) = input.body else { throw APIFailure.malformed("Send application/octet-stream.") }
        // `BodyLimitMiddleware` has collected the body within its limit.
        let bytes = try await [UInt8](collecting: body, upTo: services.configuration.maximumJSONBodyBytes)
        let frame: SharedSendFrame
        do {
            frame = try SharedSendFrame(serialized: bytes)
        } catch {
            throw APIFailure.malformed(error.description)
        }
        let submission = try MailboxSubmission(
            frame, from: caller.address, maximumEnvelopeBytes: services.configuration.maximumEnvelopeBytes)
        let receipt = try await services.mailbox.send(submission)
        return .ok(.init(body: .json(receipt.wire(messageID: submission.messageID.canonicalString))))
    }

    func fetchMailbox(_ input: Operations.FetchMailbox.Input) async throws -> Operations.FetchMailbox.Output {
        let caller = try caller()
        let after = input.query.after ?? 0
        guard after >= 0 else { throw APIFailure.malformed("`after` must be a cursor (an integer ≥ 0).") }
        let page = try await services.mailbox.page(
            of: caller.address, after: after,
            limit: try Self.limit(input.query.limit, default: 100, maximum: MailboxService.maximumPage))
        return .ok(.init(body: .json(.init(entries: try page.entries.map { try $0.wire }, hasMore: page.hasMore))))
    }

    func acknowledge(_ input: Operations.Acknowledge.Input) async throws -> Operations.Acknowledge.Output {
        let caller = try caller()
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let count = try await services.mailbox.acknowledge(body.cursors, for: caller.address)
        return .ok(.init(body: .json(.init(acknowledged: count))))
    }

    func recentConversations(_ input: Operations.RecentConversations.Input) async throws
        -> Operations.RecentConversations.Output
    {
        let conversations = try await services.mailbox.recentConversations(of: try caller().address)
        return .ok(
            .init(
                body: .json(
                    try conversations.map {
                        .init(peer: try $0.peer.wire, lastActivity: $0.lastActivity, unread: $0.unread)
                    })))
    }
}
