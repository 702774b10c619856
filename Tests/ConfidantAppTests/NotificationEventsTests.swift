import Foundation
import Testing

@testable import ConfidantApp
@testable import ConfidantKit

@Suite("Notification events")
struct NotificationEventsTests {
    @Test("a message from someone else is an arrival, named by chat or by author and group; one's own is not")
    func arrivals() {
        let bob = PageModelTests.bob
        let family = UUID()
        let carol = UUID()
        let names = [bob.id: "Bob Builder", family: "Family", carol: "Carol"]
        let fromBob = PageModelTests.line("dinner?", .incoming, .received)
        #expect(
            NotificationEvents.arrival(.message(fromBob), names: names, groups: [])
                == .init(
                    conversation: bob.id.canonicalString, name: "Bob Builder", text: "dinner?",
                    chat: "/chat/\(bob.id.canonicalString)"))
        var inGroup = ChatMessage(
            id: UUID(), sequence: 2, peer: family, direction: .incoming, sentAt: PageModelTests.now, text: "hi all",
            unreadableReason: nil, status: .received, isRead: false)
        inGroup.author = carol
        #expect(
            NotificationEvents.arrival(.message(inGroup), names: names, groups: [family])
                == .init(
                    conversation: family.canonicalString, name: "Carol in Family", text: "hi all",
                    chat: "/groups/\(family.canonicalString)"))
        let mine = PageModelTests.line("on my way", .outgoing, .sent)
        #expect(NotificationEvents.arrival(.message(mine), names: names, groups: []) == nil)
        #expect(NotificationEvents.arrival(.changed, names: names, groups: []) == nil)
    }
}
