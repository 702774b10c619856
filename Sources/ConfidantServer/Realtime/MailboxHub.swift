import Foundation

/// Wakes the WebSocket connections of devices whose mailbox got new entries. A wake carries no
/// data: each connection then reads its mailbox after the last cursor it sent, so a coalesced or
/// duplicated wake can neither lose nor repeat an entry.
actor MailboxHub {
    private var listeners: [DeviceAddress: [UUID: AsyncStream<Void>.Continuation]] = [:]

    /// A stream that yields once at once (to replay what is stored) and then once per wake.
    func subscribe(_ address: DeviceAddress) -> (token: UUID, wakes: AsyncStream<Void>) {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let token = UUID()
        listeners[address, default: [:]][token] = continuation
        continuation.yield()
        return (token, stream)
    }

    func unsubscribe(_ address: DeviceAddress, token: UUID) {
        listeners[address]?.removeValue(forKey: token)?.finish()
        if listeners[address]?.isEmpty == true { listeners[address] = nil }
    }

    func wake(_ addresses: some Sequence<DeviceAddress>) {
        for address in addresses {
            for continuation in listeners[address]?.values ?? [:].values { continuation.yield() }
        }
    }

    /// Wakes every local stream (after fan-out notifications may have been missed).
    func wakeEveryone() {
        for continuation in listeners.values.flatMap(\.values) { continuation.yield() }
    }

    /// Ends every stream (server shutdown).
    func finishAll() {
        for continuation in listeners.values.flatMap(\.values) { continuation.finish() }
        listeners = [:]
    }
}
