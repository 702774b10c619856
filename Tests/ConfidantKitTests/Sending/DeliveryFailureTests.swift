import ConfidantAPI
import Foundation
import Testing

@testable import ConfidantKit

@Suite("Why a message was not sent, typed, stored and worded in one place")
struct DeliveryFailureTests {
    static let failures: [DeliveryFailure] = [
        .keyChangedSinceVerification(name: "Bob \"the builder\" {x}"), .noRecipientDevice, .devicesKeptChanging,
        .refused(code: .quotaExceeded, message: "the mailbox is full"), .other("cannot read the file /tmp/a"),
    ]

    @Test("each failure reads back from its stored form as it was written", arguments: failures)
    func storedFormRoundTrips(_ failure: DeliveryFailure) {
        #expect(DeliveryFailure(stored: failure.stored) == failure)
    }

    @Test("a reason stored as plain text (before reasons were typed) reads as that text; so does a malformed object")
    func plainTextReadsAsOther() {
        #expect(
            DeliveryFailure(stored: "the recipient has no signed-in device yet")
                == .other("the recipient has no signed-in device yet"))
        #expect(DeliveryFailure(stored: "{not json") == .other("{not json"))
        #expect(DeliveryFailure(stored: #"{"reason":"mystery","text":"x"}"#) == .other("x"))
    }

    @Test("the wording: what a screen shows for each failure, and the status line around it")
    func wording() {
        #expect(
            DeliveryFailure.keyChangedSinceVerification(name: "Bob").description
                == "held: Bob's security key changed after you verified it; compare safety numbers, then retry")
        #expect(DeliveryFailure.noRecipientDevice.description == "the recipient has no signed-in device yet")
        #expect(
            DeliveryFailure.refused(code: .quotaExceeded, message: "full").description
                == "the server refused (\(APIErrorCode.quotaExceeded.httpStatus) quota_exceeded): full")
        #expect(
            DeliveryFailure(ConfidantKitError.server(status: 413, code: .tooLarge, message: "big"))
                == .refused(code: .tooLarge, message: "big"))
        #expect(
            DeliveryStatusText.label(.failed(.noRecipientDevice)) == "failed: the recipient has no signed-in device yet"
        )
        let now = Date(timeIntervalSince1970: 1_000_000)
        #expect(DeliveryStatusText.retry(at: now.addingTimeInterval(7.2), now: now) == "in 8 s")
        #expect(DeliveryStatusText.retry(at: now.addingTimeInterval(600), now: now) == "in 10 min")
        #expect(DeliveryStatusText.retry(at: now.addingTimeInterval(-5), now: now) == "now")
        #expect(DeliveryStatusText.retry(at: .distantFuture, now: now) == "in 525600 min")
    }
}
