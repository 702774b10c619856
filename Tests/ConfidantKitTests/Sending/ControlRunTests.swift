import ConfidantCrypto
import Foundation
import Testing

@testable import ConfidantKit

@Suite("Queued control messages merged into runs")
struct ControlRunTests {
    private func queued(_ content: ChatPayload.Content, to peer: UUID)
        -> LocalStore.QueuedControl
    {
        LocalStore.QueuedControl(
            messageID: .timeOrdered(), peer: peer, payload: ChatPayload(conversation: peer, content: content),
            attempts: 0)
    }

    private func delivered(_ count: Int = 1, to peer: UUID) -> LocalStore.QueuedControl {
        queued(.receipt(Receipt(.delivered, messageIDs: (0..<count).map { _ in UUID() })), to: peer)
    }

    private func ids(_ run: ControlRun) -> [UUID] {
        guard case .receipt(let receipt) = run.payload.content else { return [] }
        return receipt.messageIDs
    }

    @Test("receipts of one kind queued one after another for one peer go as one, in order")
    func mergesConsecutiveReceipts() {
        let alice = UUID()
        let bob = UUID()
        let queue = [delivered(2, to: alice), delivered(to: alice), delivered(to: alice)]
        let runs = ControlRun.runs(of: queue)
        #expect(runs.count == 1)
        #expect(runs[0].messageIDs == queue.map(\.messageID))
        let expected = queue.flatMap { control -> [UUID] in
            guard case .receipt(let receipt) = control.payload.content else { return [] }
            return receipt.messageIDs
        }
        #expect(ids(runs[0]) == expected)
        #expect(runs[0].payload.conversation == alice)

        // Another peer, another kind or an edit ends a run.
        let read = queued(.receipt(Receipt(.read, messageIDs: [UUID()])), to: alice)
        let edit = queued(.edit(messageID: UUID(), text: "fixed"), to: alice)
        let mixed = [delivered(to: alice), delivered(to: bob), delivered(to: alice), read, edit, delivered(to: alice)]
        let cut = ControlRun.runs(of: mixed)
        #expect(cut.map(\.controls.count) == [1, 1, 1, 1, 1, 1])
        #expect(cut.map(\.first.messageID) == mixed.map(\.messageID))
        #expect(cut.map(\.payload) == mixed.map(\.payload))
    }

    @Test("a merged receipt names at most the limit's messages")
    func boundedByTheLimit() {
        let alice = UUID()
        let queue = [delivered(600, to: alice), delivered(400, to: alice), delivered(1, to: alice)]
        let runs = ControlRun.runs(of: queue)
        #expect(runs.map(\.controls.count) == [2, 1])
        #expect(ids(runs[0]).count == ChatPayload.maximumReceiptIDs)
        #expect(ids(runs[1]).count == 1)
    }

    @Test("a run's message id: its own for one control, else derived from all of them, version 7")
    func messageIDs() {
        let alice = UUID()
        let single = delivered(to: alice)
        #expect(ControlRun.runs(of: [single])[0].messageID == single.messageID)

        let queue = [delivered(to: alice), delivered(to: alice)]
        let merged = ControlRun.runs(of: queue)[0].messageID
        #expect(ControlRun.runs(of: queue)[0].messageID == merged)
        #expect(!queue.map(\.messageID).contains(merged))
        // A run that grew is another message.
        let grown = ControlRun.runs(of: queue + [delivered(to: alice)])[0].messageID
        #expect(grown != merged)
        for id in [merged, grown] {
            let bytes = id.uuid
            let first = queue[0].messageID.uuid
            #expect(
                [bytes.0, bytes.1, bytes.2, bytes.3, bytes.4, bytes.5] == [
                    first.0, first.1, first.2, first.3, first.4, first.5,
                ])
            #expect(bytes.6 >> 4 == 7)
            #expect(bytes.8 >> 6 == 0b10)
        }
    }
}
