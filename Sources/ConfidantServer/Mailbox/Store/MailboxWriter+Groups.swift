import ConfidantCrypto
import Fluent
import Foundation
import NIOCore
import SQLKit
import Synchronization

/// A group of requests the writer stores together, and its outcome.
extension MailboxWriter {
    /// A group's outcome, one per request in order.
    struct GroupResults: Sendable {
        var receipts: [Int: Result<MailboxReceipt, any Error>] = [:]
        var acknowledged: [Int: Int] = [:]
        var failure: (any Error)?

        init() {}

        init(failure: any Error) {
            self.failure = failure
        }

        /// Answers every request. Those to be answered on an event loop are handed to it together,
        /// one hand-over per loop instead of one per answer: the write thread is the stage every
        /// message passes.
        func reply(to group: [Request]) {
            var onLoops: [ObjectIdentifier: (loop: any EventLoop, answers: [Answer])] = [:]
            for (index, request) in group.enumerated() {
                switch request {
                case .send(_, let loop, let reply):
                    let result = failure.map { .failure($0) } ?? receipts[index] ?? .failure(APIFailure.internalError)
                    guard let loop else {
                        reply(result)
                        continue
                    }
                    onLoops[ObjectIdentifier(loop), default: (loop, [])].answers.append(
                        Answer(reply: reply, result: result))
                case .acknowledge(_, _, _, let reply):
                    reply(
                        failure.map { .failure($0) } ?? acknowledged[index].map { .success($0) }
                            ?? .failure(APIFailure.internalError))
                }
            }
            for (loop, answers) in onLoops.values {
                loop.execute { for answer in answers { answer.reply(answer.result) } }
            }
        }

        private struct Answer: Sendable {
            let reply: @Sendable (Result<MailboxReceipt, any Error>) -> Void
            let result: Result<MailboxReceipt, any Error>
        }
    }

    /// A group split into its sends and its acknowledgements, each with its place in the group.
    struct SortedGroup {
        var sends: [(index: Int, submission: MailboxSubmission)] = []
        var acknowledgements: [(index: Int, cursors: [Int64], address: DeviceAddress)] = []

        init(_ group: [Request]) {
            for (index, request) in group.enumerated() {
                switch request {
                case .send(let submission, _, _): sends.append((index, submission))
                case .acknowledge(let cursors, let address, _, _): acknowledgements.append((index, cursors, address))
                }
            }
        }

        /// The outcomes in the group's order: one receipt per send, one count per acknowledgement.
        func results(receipts: [Result<MailboxReceipt, any Error>], acknowledged counts: [Int]) -> GroupResults {
            var results = GroupResults()
            for (send, receipt) in zip(sends, receipts) { results.receipts[send.index] = receipt }
            for (acknowledgement, count) in zip(acknowledgements, counts) {
                results.acknowledged[acknowledgement.index] = count
            }
            return results
        }
    }
}
