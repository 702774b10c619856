import Crypto
import Foundation

/// Queued control messages that go as one envelope: a single control, or receipts of one kind
/// queued one after another for the same peer and conversation (at most `ChatPayload.maximumReceiptIDs` messages
/// named), merged into one receipt.
struct ControlRun {
    let controls: [LocalStore.QueuedControl]
    let payload: ChatPayload

    var first: LocalStore.QueuedControl { controls[0] }
    var messageIDs: [UUID] { controls.map(\.messageID) }

    /// The envelope's message id. A single control keeps its own. A merged run gets one derived
    /// from all of its controls' ids, so a retry of the same run is deduplicated by the relay,
    /// while a run that grew meanwhile is a new message: under one id, the relay would take
    /// the longer receipt for a retry of the shorter one and drop it. Version 7 like the
    /// others: the first control's time, then bits of a hash of the ids.
    var messageID: UUID {
        guard controls.count > 1 else { return first.messageID }
        var hash = SHA256()
        for control in controls { withUnsafeBytes(of: control.messageID.uuid) { hash.update(bufferPointer: $0) } }
        let digest = Array(hash.finalize())
        let time = first.messageID.uuid
        return UUID(
            uuid: (
                time.0, time.1, time.2, time.3, time.4, time.5, 0x70 | (digest[0] & 0x0F), digest[1],
                0x80 | (digest[2] & 0x3F), digest[3], digest[4], digest[5], digest[6], digest[7], digest[8], digest[9]
            ))
    }

    /// The queue cut into runs, in order.
    static func runs(of queue: [LocalStore.QueuedControl]) -> [ControlRun] {
        var runs: [ControlRun] = []
        var index = queue.startIndex
        while index < queue.endIndex {
            let control = queue[index]
            var members = [control]
            index += 1
            guard case .receipt(let receipt) = control.payload.content else {
                runs.append(ControlRun(controls: members, payload: control.payload))
                continue
            }
            var ids = receipt.messageIDs
            while index < queue.endIndex, queue[index].peer == control.peer,
                queue[index].payload.conversation == control.payload.conversation,
                case .receipt(let next) = queue[index].payload.content, next.type == receipt.type,
                ids.count + next.messageIDs.count <= ChatPayload.maximumReceiptIDs
            {
                ids += next.messageIDs
                members.append(queue[index])
                index += 1
            }
            runs.append(
                ControlRun(
                    controls: members,
                    payload: members.count == 1
                        ? control.payload
                        : ChatPayload(
                            conversation: control.payload.conversation,
                            content: .receipt(Receipt(receipt.type, messageIDs: ids)))))
        }
        return runs
    }
}
