import ConfidantAPI
import ConfidantCrypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization
import WebSocketKit

/// Where the realtime connection stands, for a status line.
public enum ConnectionState: Sendable, Equatable {
    case connecting
    /// Connected and caught up with everything stored on the server.
    case live
    /// Disconnected; the next attempt is after this delay.
    case waiting(retryIn: Duration, reason: String)
    case stopped
    /// The session ended (signed out, this device removed from another, the account deleted):
    /// nothing reconnects until the user logs in again.
    case signedOut
}

/// Keeps `/v1/stream` open: hands entries to `receive` (whatever arrived together, in order),
/// acknowledges what it stored once `sync` has it on disk, and after a drop reconnects with
/// exponential back-off (with jitter) and resumes after the stored cursor, so nothing is lost or
/// delivered twice. While connected, `sender` sends messages over the same socket.
struct MailboxStreamClient: Sendable {
    let serverURL: URL
    let token: String
    /// This device's key: the stream opens with a challenge it must sign.
    let identity: PrivateIdentity
    let address: DeviceAddress
    let sender: StreamSender
    /// What was stored and waits to be acknowledged, across connections.
    let held: HeldAcknowledgements
    var initialDelay: Duration = .milliseconds(250)
    var maximumDelay: Duration = .seconds(15)
    /// The most entries opened and stored in one transaction.
    static let batchLimit = 200

    /// What `receive` stored: the cursors to acknowledge, and the store's commit that holds them
    /// (to be synced first).
    typealias Received = (cursors: [Int64], commit: UInt64)

    /// Runs until the task is cancelled; throws only `sessionExpired` (after reporting `signedOut`).
    func run(
        cursor: @Sendable () async throws -> Int64,
        receive: @Sendable ([Components.Schemas.MailboxEntry]) async throws -> Received,
        sync: @escaping @Sendable (UInt64) async throws -> Void,
        unacknowledged: @escaping @Sendable () async throws -> [Int64],
        state: @Sendable (ConnectionState) async -> Void
    ) async throws {
        var delay = initialDelay
        while !Task.isCancelled {
            await state(.connecting)
            let reason: String
            do {
                reason = try await session(
                    after: cursor(), receive: receive, sync: sync, unacknowledged: unacknowledged,
                    connected: { delay = initialDelay }, state: state)
            } catch ConfidantKitError.sessionExpired {
                await sender.detach()
                await state(.signedOut)
                throw ConfidantKitError.sessionExpired
            } catch {
                reason = RelayClient.describe(error)
            }
            await sender.detach()
            if Task.isCancelled { break }
            let jittered = delay * Double.random(in: 0.8...1.2)
            await state(.waiting(retryIn: jittered, reason: reason))
            try? await Task.sleep(for: jittered)
            delay = min(delay * 2, maximumDelay)
        }
        await state(.stopped)
    }

    /// One connection, until it closes; returns why it closed.
    private func session(
        after cursor: Int64,
        receive: @Sendable ([Components.Schemas.MailboxEntry]) async throws -> Received,
        sync: @escaping @Sendable (UInt64) async throws -> Void,
        unacknowledged: @escaping @Sendable () async throws -> [Int64],
        connected: () -> Void,
        state: @Sendable (ConnectionState) async -> Void
    ) async throws -> String {
        let inbox = FrameInbox()
        let socket = try await connect(after: cursor, inbox: inbox)
        connected()
        defer { held.detach(inbox) }
        let encoder = StreamCoding.encoder()
        let acknowledgements = Acknowledging(held: held, inbox: inbox, socket: socket, sync: sync)
        defer { acknowledgements.cancelTimer() }
        func flush(_ pending: inout [Components.Schemas.MailboxEntry]) async throws {
            guard !pending.isEmpty else { return }
            let received = try await receive(pending)
            pending = []
            try await acknowledgements.stored(received)
        }
        let reason = try await withTaskCancellationHandler {
            // Whatever arrived together is taken at once, so a burst is opened and stored in a
            // few transactions instead of one per message.
            for await _ in inbox.signals {
                var pending: [Components.Schemas.MailboxEntry] = []
                for event in inbox.takeAll() {
                    switch event {
                    case .receipts(let receipts):
                        await sender.resolve(receipts)
                    case .acknowledge:
                        try await flush(&pending)
                        try await acknowledgements.now()
                    case .closed:
                        try await flush(&pending)
                        switch Self.relayCode(socket.closeCode) {
                        // The session ended, or this device's key is not the device's any more:
                        // reconnecting would be refused.
                        case .revoked?, .proofRefused?: throw ConfidantKitError.sessionExpired
                        case .proofLate?: return "this device's answer to the server's challenge came too late"
                        case .superseded?:
                            return "more of this profile's processes are live than the server keeps; this one waits"
                        case nil: return Self.closedReason
                        }
                    case .frame(let frame):
                        if let challenge = frame.challenge {
                            let proof = try encoder.encode(
                                Components.Schemas.StreamRequest(answering: challenge, as: address, identity: identity))
                            // A send that fails found the socket closed: its close event
                            // follows and says why.
                            try? await socket.send(String(decoding: proof, as: UTF8.self))
                            // Sends go over this socket only once the proof is on it: the relay
                            // takes anything else first as a refused proof (4403), which signs
                            // the device out for good.
                            await sender.attach(socket, binarySendVersions: frame.binarySendVersions ?? [])
                            // Acknowledgements too, and first what the last connection stored
                            // and could not acknowledge.
                            acknowledgements.proofSent()
                            if held.needsSweep, let stranded = try? await unacknowledged() {
                                // Once per messenger (until it succeeds): what a process before
                                // this one stored and did not live to acknowledge.
                                held.swept(holding: stranded)
                            }
                            try await acknowledgements.now()
                        }
                        for entry in (frame.entry.map { [$0] } ?? []) + (frame.entries ?? []) {
                            pending.append(entry)
                            if pending.count >= Self.batchLimit {
                                try await flush(&pending)
                            }
                        }
                        if let receipt = frame.receipt { await sender.resolve(receipt) }
                        if let refused = frame.refused { await sender.resolve(refused) }
                        if frame.caughtUp == true {
                            try await flush(&pending)
                            await state(.live)
                        }
                    }
                }
                try await flush(&pending)
            }
            return Self.closedReason
        } onCancel: {
            _ = socket.close()
        }
        try? await socket.close()
        return reason
    }

    private static let closedReason = "the server closed the connection"

    /// `{"cursors":[N,…]}`, byte for byte as `JSONEncoder` writes the `StreamRequest` (the tests
    /// compare them), without its generic path: one per frame of acknowledgements.
    static func acknowledgement(_ cursors: [Int64]) -> String {
        #"{"cursors":["# + cursors.map(String.init).joined(separator: ",") + "]}"
    }

    /// The relay's own reason for closing, if the close code is one of its codes.
    private static func relayCode(_ code: WebSocketErrorCode?) -> StreamCloseCode? {
        guard case .unknown(let raw)? = code else { return nil }
        return StreamCloseCode(rawValue: raw)
    }

    /// One connection's acknowledgements: what is stored is held (`HeldAcknowledgements`) and
    /// acknowledged a moment later, or at once once a frame's worth waits, after one sync.
    private final class Acknowledging {
        let held: HeldAcknowledgements
        let inbox: FrameInbox
        let socket: WebSocket
        let sync: @Sendable (UInt64) async throws -> Void
        private var timer: Task<Void, Never>?
        /// Nothing but the proof may go first: the relay takes any other frame as a refused
        /// proof, which signs the device out.
        private var proven = false

        init(
            held: HeldAcknowledgements, inbox: FrameInbox, socket: WebSocket,
            sync: @escaping @Sendable (UInt64) async throws -> Void
        ) {
            self.held = held
            self.inbox = inbox
            self.socket = socket
            self.sync = sync
        }

        func stored(_ received: Received) async throws {
            guard held.hold(received.cursors, commit: received.commit) < HeldAcknowledgements.frameLimit else {
                try await now()
                return
            }
            guard timer == nil else { return }
            let (delay, sleep, inbox) = (held.delay, held.sleep, inbox)
            timer = Task {
                do { try await sleep(delay) } catch { return }
                guard !Task.isCancelled else { return }
                inbox.put(.acknowledge)
            }
        }

        /// The proof is on the socket: acknowledgements may follow, and `stopLive` may ask for them.
        func proofSent() {
            proven = true
            held.attach(inbox)
        }

        /// Syncs what is held and acknowledges it, a frame of at most `frameLimit` cursors at a
        /// time. A frame that does not go (the connection closing) leaves its cursors held.
        func now() async throws {
            cancelTimer()
            defer { held.acknowledged() }
            guard proven else { return }
            while let (cursors, commit) = held.take() {
                do {
                    try await sync(commit)
                    try await socket.send(MailboxStreamClient.acknowledgement(cursors))
                } catch {
                    held.giveBack(cursors, commit: commit)
                    throw error
                }
            }
        }

        func cancelTimer() {
            timer?.cancel()
            timer = nil
        }
    }
}
