import ConfidantCrypto
import Foundation

/// What a sealed value is: its table, column and row, bound as associated data so that a sealed
/// value moved to another row or column does not open (docs/PROTOCOL.md §8).
enum SealContext {
    case account, prekeys
    case contact(UUID)
    case draft(conversation: UUID)
    case message(id: UUID, peer: UUID, direction: ChatMessage.Direction)
    case reactions(id: UUID, peer: UUID, direction: ChatMessage.Direction)
    case replyExcerpt(id: UUID, peer: UUID, direction: ChatMessage.Direction)
    case attachment(id: UUID, message: UUID)
    case control(UUID)
    case session(DeviceAddress, fingerprint: String)
    case groupChange(group: UUID, digest: String)
    case sendingChain(group: UUID, chain: UUID)
    case receivingChain(chain: UUID, group: UUID, owner: DeviceAddress)

    var text: String {
        switch self {
        case .account: "meta|account"
        case .prekeys: "meta|prekeys"
        case .contact(let id): "contact|\(id.canonicalString)"
        case .draft(let conversation): "conversation_draft|\(conversation.canonicalString)"
        case .message(let id, let peer, let direction):
            "message|\(id.canonicalString)|\(peer.canonicalString)|\(direction.rawValue)"
        case .reactions(let id, let peer, let direction):
            "message_reactions|\(id.canonicalString)|\(peer.canonicalString)|\(direction.rawValue)"
        case .replyExcerpt(let id, let peer, let direction):
            "message_reply|\(id.canonicalString)|\(peer.canonicalString)|\(direction.rawValue)"
        case .attachment(let id, let message): "attachment|\(id.canonicalString)|\(message.canonicalString)"
        case .control(let id): "control|\(id.canonicalString)"
        case .groupChange(let group, let digest): "group_change|\(group.canonicalString)|\(digest)"
        case .sendingChain(let group, let chain): "sender_chain|\(group.canonicalString)|\(chain.canonicalString)"
        case .receivingChain(let chain, let group, let owner):
            "receiving_chain|\(chain.canonicalString)|\(group.canonicalString)|\(owner.userID.canonicalString)|\(owner.deviceID.canonicalString)"
        case .session(let device, let fingerprint):
            "session|\(device.userID.canonicalString)|\(device.deviceID.canonicalString)|\(fingerprint)"
        }
    }
}
