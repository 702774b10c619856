import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantKit

@Suite("Replies against a real relay")
struct ReplyTests {
    @Test(
        "a reply carries its quote to the peer and the sender's own copy; once the message is deleted, the quote says so"
    )
    func replyAndDeletedTarget() async throws {
        try await KitUser.pairOnRelay { _, alice, bob in
            let lunch = try await alice.messenger.send("lunch at noon?", to: bob.contact)
            _ = try await bob.messenger.sync()
            let (aliceID, bobID) = (await alice.messenger.me, await bob.messenger.me)
            let reply = try await bob.messenger.reply(to: lunch.id, with: "yes, at one", in: alice.contact)
            #expect(reply.status == .sent)
            #expect(reply.reply == ReplyQuote(messageID: lunch.id, excerpt: "lunch at noon?"))
            _ = try await alice.messenger.sync()
            let received = try #require(try await alice.messenger.history(with: bobID).first { $0.id == reply.id })
            #expect(received.text == "yes, at one")
            #expect(received.reply?.messageID == lunch.id && received.reply?.excerpt == "lunch at noon?")
            #expect(!received.replyTargetGone)

            try await alice.messenger.deleteForEveryone(lunch.id)
            _ = try await bob.messenger.sync()
            let own = try #require(try await bob.messenger.history(with: aliceID).first { $0.id == reply.id })
            #expect(own.reply?.excerpt == "lunch at noon?", "the quote stays")
            #expect(own.replyTargetGone, "and says its message is gone")
            await #expect(throws: ConfidantKitError.messageNotFound(lunch.id)) {
                _ = try await bob.messenger.reply(to: lunch.id, with: "too late", in: alice.contact)
            }
            let unknown = UUID()
            await #expect(throws: ConfidantKitError.messageNotFound(unknown)) {
                _ = try await bob.messenger.reply(to: unknown, with: "to what?", in: alice.contact)
            }
        }
    }

    @Test("the quote is cut to 200 characters; a reader refuses a longer one; kind 2 as docs/PROTOCOL.md §8 writes it")
    func quoteBounds() throws {
        let long = String(repeating: "é", count: 500)
        let quote = ReplyQuote(messageID: UUID(), excerpt: long)
        #expect(quote.excerpt.count == ReplyQuote.maximumCharacters && quote.excerpt.hasSuffix("…"))
        let conversation = try #require(UUID(uuidString: "0192d7e0-0000-7000-8000-000000000001"))
        let target = try #require(UUID(uuidString: "0192d7e0-0000-7000-8000-00000000000a"))
        let payload = ChatPayload(
            conversation: conversation,
            content: .message(RichMessage(text: "yes", replyTo: ReplyQuote(messageID: target, excerpt: "lunch?"))))
        let bytes = try payload.serialized
        #expect(bytes.prefix(2) == Data([1, 2]))
        #expect(
            String(decoding: bytes.dropFirst(18), as: UTF8.self)
                == #"{"replyTo":{"excerpt":"lunch?","messageId":"0192D7E0-0000-7000-8000-00000000000A"},"text":"yes"}"#)
        #expect(try ChatPayload(serialized: bytes) == payload)
        let forged =
            Data([1, 2]) + withUnsafeBytes(of: conversation.uuid) { Data($0) }
            + Data(#"{"replyTo":{"excerpt":"\#(long)","messageId":"\#(target.uuidString)"},"text":"yes"}"#.utf8)
        #expect(throws: ChatPayloadError.self) { try ChatPayload(serialized: forged) }
    }
}
