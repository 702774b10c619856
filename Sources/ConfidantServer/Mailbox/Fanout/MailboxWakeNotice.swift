import ConfidantCrypto
import Foundation

/// What a PostgreSQL NOTIFY on `PostgresMailboxListener.channel` tells every instance when a
/// write commits (the write transaction notifies): the mailboxes it touched, and which instance
/// wrote (`<user>:<device>,…,from <instance>`). The writer hands the rows to its own streams (or
/// wakes them) after the commit, so it ignores its own notice: each of its streams would otherwise
/// read its mailbox a second time for nothing, one query per message and stream. An instance of a
/// version before the `from` part reads it as an address it cannot parse and skips it.
struct MailboxWakeNotice: Equatable, Sendable {
    /// Addresses per notice: PostgreSQL refuses payloads of 8,000 bytes and more, an address is
    /// 73 characters and the `from` part 41.
    static let maximumAddresses = 100

    let addresses: [DeviceAddress]
    /// The instance that wrote, when the notice says (`MailboxHub.instance`).
    let from: UUID?

    private static let fromPrefix = "from "

    /// The payloads that announce `addresses`, at most `maximumAddresses` to each.
    static func payloads(for addresses: [DeviceAddress], from instance: UUID) -> [String] {
        let all = addresses.map(\.description)
        return stride(from: 0, to: all.count, by: maximumAddresses).map { start in
            (all[start..<min(start + maximumAddresses, all.count)] + [fromPrefix + instance.canonicalString])
                .joined(separator: ",")
        }
    }

    /// Reads a payload; parts that are neither an address nor the `from` part are skipped.
    init(payload: String) {
        var addresses: [DeviceAddress] = []
        var from: UUID?
        for part in payload.split(separator: ",") {
            if part.hasPrefix(Self.fromPrefix) {
                from = UUID(hyphenatedHex: part.dropFirst(Self.fromPrefix.count))
            } else if let address = DeviceAddress(parsing: part) {
                addresses.append(address)
            }
        }
        self.addresses = addresses
        self.from = from
    }
}
