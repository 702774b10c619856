import ConfidantAPI
import ConfidantCrypto
import Foundation

/// A window of ordered sends over the live stream: messages from the front of the outbox go
/// without waiting for each one's receipt, up to ``size`` at a time, each naming the one before
/// it (docs/PROTOCOL.md §7.2), so none overtakes one the relay refuses. It runs on the outbox's
/// actor (`drain`) and stops at the first message that does not go plainly — one it cannot seal
/// with what it has, a refusal, a dropped connection — leaving it and everything after it queued
/// for `SingleDelivery`, which handles each case.
struct StreamWindow: Sendable {
    /// How many messages are on their way before the window waits for the first receipt.
    static let size = 16

    let store: LocalStore
    let directory: KeyDirectory
    let stream: StreamSender
    let sealer: EnvelopeSealer
    let payloads: OutgoingPayloads
    let events: MessengerEvents
    let diagnostics: DeliveryDiagnostics?

    /// Sends from the front of `queue` and takes off it those the relay stored.
    /// - Returns: how many went.
    func deliver(
        _ queue: inout ArraySlice<LocalStore.QueuedMessage>, fetched: inout [UUID: [PublicIdentity]],
        drain: isolated OutboxDrain
    ) async throws -> Int {
        setRunning(true, drain)
        defer {
            setRunning(false, drain)
            // Handed over since the last refill: queued now, for the delivery to take next.
            if !drain.queueHandedOver().isEmpty { drain.drainAgain = true }
        }
        var inFlight: [(id: UUID, key: String)] = []
        // Whether each peer's keys changed since they were verified, read once for the window.
        var keysChanged: [UUID: Bool] = [:]
        var filling = true
        var sent = 0
        while true {
            // The free places filled: what each message needs gathered first, then all sealed in
            // one store transaction, then sent in order.
            var ready: [PlainMessage] = []
            if filling, drain.drainAgain, inFlight.count >= queue.count {
                // Messages queued since the outbox was read (their senders wait for them): into
                // this window, after those already in it.
                drain.drainAgain = false
                queue.append(contentsOf: try queuedMeanwhile(excluding: queue, drain))
            }
            while filling, inFlight.count + ready.count < Self.size, inFlight.count + ready.count < queue.count {
                let queued = queue[queue.startIndex + inFlight.count + ready.count]
                if ready.isEmpty, let batch = drain.presealed.removeValue(forKey: queued.message.id) {
                    // Sealed as it was queued: it goes as it is.
                    try await syncBeforeSending(inFlight: inFlight)
                    guard let key = try? await stream.start(batch, after: inFlight.last?.id) else {
                        filling = false
                        break
                    }
                    inFlight.append((queued.message.id, key))
                    continue
                }
                let peerKeys = fetched.removeValue(forKey: queued.message.peer)
                guard let plain = await plainMessage(queued, peerKeys: peerKeys, keysChanged: &keysChanged, drain)
                else {
                    filling = false
                    break
                }
                ready.append(plain)
            }
            let batches = sealer.sealTogether(ready)
            if batches.count < ready.count { filling = false }
            if !batches.isEmpty { try await syncBeforeSending(inFlight: inFlight) }
            for (plain, batch) in zip(ready, batches) {
                guard let key = try? await stream.start(batch, after: inFlight.last?.id) else {
                    filling = false
                    break
                }
                inFlight.append((plain.id, key))
            }
            guard let oldest = inFlight.first else { return sent }
            // The oldest's answer, then those that came with it: finished in one transaction.
            // While the window has room, a message queued meanwhile goes at once instead of after
            // that answer.
            var stored: [UUID] = []
            var refusal: (any Error)?
            do {
                if filling, inFlight.count < Self.size {
                    if drain.drainAgain { continue }
                    guard try await stream.answerOrNudge(oldest.key) != nil else { continue }
                } else {
                    _ = try await stream.answer(oldest.key)
                }
                stored.append(oldest.id)
                for next in inFlight.dropFirst() {
                    guard let answer = await stream.answerIfArrived(next.key) else { break }
                    do {
                        _ = try answer.get()
                        stored.append(next.id)
                    } catch {
                        refusal = error
                        break
                    }
                }
            } catch {
                refusal = error
            }
            if !stored.isEmpty {
                do {
                    try store.finish(stored, failure: nil)
                } catch {
                    // Leave no answer behind that nobody will ask for.
                    for rest in inFlight.dropFirst(stored.count) { _ = try? await stream.answer(rest.key) }
                    throw error
                }
                for id in stored {
                    events.emit(.delivery(id: id, status: .sent))
                    drain.through(id, .sent)
                }
                diagnostics?.update { [count = stored.count] in
                    $0.transports += Array(repeating: .stream, count: count)
                    $0.sentInWindows += count
                }
                queue.removeFirst(stored.count)
                inFlight.removeFirst(stored.count)
                sent += stored.count
            }
            guard let refusal else { continue }
            // The rest were refused after it (or their answers were lost with the connection):
            // they stay queued and go again, in order; a retry of one the relay did store is
            // answered as a duplicate.
            for rest in inFlight.dropFirst() { _ = try? await stream.answer(rest.key) }
            if case ConfidantKitError.server(_, .deviceMismatch, _) = refusal, let first = queue.first {
                // Its devices changed: `SingleDelivery` fetches them afresh on its first attempt.
                directory.devicesChanged(of: first.message.peer)
                directory.devicesChanged(of: sealer.me)
            }
            return sent
        }
    }

    private func setRunning(_ running: Bool, _ drain: isolated OutboxDrain) {
        drain.handOvers.windowRunning = running
        diagnostics?.update { $0.windowRunning = running }
    }

    /// What was queued since the outbox was read: the messages handed over, queued now, and when
    /// a delivery was asked for meanwhile, whatever else the outbox holds beyond `queue`.
    private func queuedMeanwhile(excluding queue: ArraySlice<LocalStore.QueuedMessage>, _ drain: isolated OutboxDrain)
        throws -> [LocalStore.QueuedMessage]
    {
        let handed = drain.queueHandedOver()
        guard drain.handOvers.queuedOutsideWindow else {
            // Nothing else was queued here since the outbox was read: what was handed over is all
            // that is new, and last in the outbox's order.
            return handed
        }
        drain.handOvers.queuedOutsideWindow = false
        return try store.outbox(
            excluding: Set(queue.map(\.message.id)),
            reusing: Dictionary(handed.map { ($0.message.id, $0) }, uniquingKeysWith: { $1 }))
    }

    /// `LocalStore.syncBeforeSending` for a window; if the log cannot be synced, the answers of
    /// the sends on their way are taken first, so that none is left behind that nobody will ask for.
    private func syncBeforeSending(inFlight: [(id: UUID, key: String)]) async throws {
        do {
            try await store.syncBeforeSending()
        } catch {
            for sent in inFlight { _ = try? await stream.answer(sent.key) }
            throw error
        }
    }

    /// What sealing the message for its peer's and this account's other devices takes, with the
    /// keys at hand; nil when anything else is needed (a key change, no device, an error), which
    /// `SingleDelivery` sees to.
    private func plainMessage(
        _ queued: LocalStore.QueuedMessage, peerKeys fetched: [PublicIdentity]?, keysChanged: inout [UUID: Bool],
        _ drain: isolated OutboxDrain
    ) async -> PlainMessage? {
        let message = queued.message
        do {
            let (check, changed) = try await RecipientCheck.check(
                queued, peerKeys: fetched, changed: keysChanged[message.peer], directory: directory, store: store)
            keysChanged[message.peer] = changed
            guard case .ready(let peerKeys) = check else { return nil }
            let (forPeer, forOwn) = try await payloads.payloads(
                of: message, hasAttachments: queued.hasAttachments, progress: drain.progress(of: message.id))
            return PlainMessage(
                id: message.id, sentAt: message.sentAt,
                groups: try await sealer.groups(
                    peer: message.peer, peerKeys: peerKeys, forPeer: forPeer, forOwn: forOwn))
        } catch {
            return nil
        }
    }
}
