import ConfidantCrypto
import Foundation

/// A signed-in profile filled with made-up conversations, written straight into the store: what
/// the app's rendering benchmark opens (`Benchmarks/app-render.sh`). Package-only; no server
/// knows the account, so the profile works offline.
package enum SyntheticProfile {
    /// Writes the profile: `conversations` peers with `messagesPerConversation` lines each, and
    /// `longChat` lines with the first peer, their texts from `text` (conversation, line) if
    /// given; returns that peer's id.
    package static func write(
        _ profile: ProfileStorage, passphrase: String, server: URL, conversations: Int, messagesPerConversation: Int,
        longChat: Int, now: Date = Date(), text: ((_ conversation: Int, _ line: Int) -> String)? = nil
    ) throws -> UUID {
        try profile.prepare()
        let identity = try PrivateIdentity.generate()
        try profile.keyStore.saveIdentity(identity, passphrase: passphrase)
        let store = try LocalStore.open(at: profile.storeURL, identity: identity)
        try store.saveAccount(
            AccountState(
                serverURL: server, userID: UUID(), deviceID: identity.deviceID, email: "bench@example.com",
                displayName: "Bench Marker", token: "offline", tokenExpiresAt: now.addingTimeInterval(86_400)))
        var first: UUID?
        for index in 0..<conversations {
            let peer = Contact(id: UUID(), email: "peer\(index)@example.com", displayName: "Peer \(index) Example")
            first = first ?? peer.id
            try store.saveContact(peer)
            let count = index == 0 ? max(longChat, messagesPerConversation) : messagesPerConversation
            var batch: [LocalStore.NewMessage] = []
            for line in 0..<count {
                let incoming = line % 3 != 0
                batch.append(
                    LocalStore.NewMessage(
                        id: UUID(), peer: peer.id, direction: incoming ? .incoming : .outgoing, senderDevice: nil,
                        sentAt: now.addingTimeInterval(-Double(index * 600 + (count - line) * 7)),
                        text: text?(index, line)
                            ?? "Message \(line) in conversation \(index): a line of ordinary length to render.",
                        unreadableReason: nil, state: incoming ? .received : .sent))
                if batch.count == 1_000 {
                    try store.insert(batch)
                    batch = []
                }
            }
            try store.insert(batch)
        }
        guard let first else { throw ConfidantKitError.storeDamaged("a synthetic profile needs a conversation") }
        return first
    }
}
