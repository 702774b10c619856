import ConfidantAPI
import ConfidantAuth
import ConfidantCrypto
import ConfidantVault
import Foundation
import Testing

@testable import ConfidantApp
@testable import ConfidantKit

/// Given a view model's state, the page model says what the page shows: no browser needed.
@Suite("Page models from view-model state")
struct PageModelTests {
    static let page = PageInfo(title: "Bob", csrf: "token", signedInAs: "Alice", error: nil)
    static let bob = Contact(
        id: UUID(uuidString: "0F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9") ?? UUID(), email: "bob@example.com",
        displayName: "Bob Builder")
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func line(
        _ text: String?, _ direction: ChatMessage.Direction, _ status: ChatMessage.Status, id: UUID = UUID(),
        attachments: [ChatAttachment] = [], deleted: Bool = false, retryAt: Date? = nil
    ) -> ChatMessage {
        var message = ChatMessage(
            id: id, sequence: 1, peer: bob.id, direction: direction, sentAt: now, text: text, unreadableReason: nil,
            status: status, isRead: true)
        message.attachments = attachments
        message.isDeleted = deleted
        message.retryAt = retryAt
        return message
    }

    static func chat(_ messages: [ChatMessage], connection: ConnectionState = .live, timer: Int? = nil)
        -> ChatPageModel
    {
        ChatPageModel(
            page: page, peer: bob, messages: messages, keyChangeBanner: nil, connection: connection,
            disappearingTimer: timer, maxUploadBytes: 1 << 20, now: now)
    }

    @Test("own messages say how they went; a failed one offers retry, not editing; the peer's say nothing")
    func statuses() throws {
        let failedID = UUID()
        let model = Self.chat([
            Self.line("hi", .outgoing, .read), Self.line("queued", .outgoing, .pending, retryAt: Self.now + 8),
            Self.line("lost", .outgoing, .failed(.noRecipientDevice), id: failedID),
            Self.line("yo", .incoming, .received),
        ])
        #expect(
            model.messages.map(\.status) == [
                "read ✓✓", "waiting for the server (trying again in 8 s)",
                "not sent: the recipient has no signed-in device yet", nil,
            ])
        #expect(model.messages.map(\.side) == ["mine", "mine", "mine", "theirs"])
        #expect(model.messages.map(\.failed) == [false, false, true, false])
        #expect(model.messages.map(\.canChange) == [true, true, false, false])
        let failed = model.messages[2]
        #expect(failed.retry == "/chat/\(Self.bob.id.canonicalString)/retry/\(failedID.canonicalString)")
    }

    @Test("a deleted message and one with files alone: what text shows, and each file's link")
    func deletedAndFiles() {
        let id = UUID()
        let photo = ChatAttachment(
            id: UUID(), index: 0, name: "cat.png", size: 2048, contentType: "image/png", thumbnail: nil, isLocal: true)
        let model = Self.chat([
            Self.line(nil, .incoming, .received, id: id, attachments: [photo]),
            Self.line("secret", .outgoing, .sent, deleted: true),
        ])
        let withFile = model.messages[0]
        #expect(withFile.text == "" && !withFile.hasText && withFile.hasFiles)
        #expect(withFile.files.map(\.url) == ["/chat/\(Self.bob.id.canonicalString)/files/\(id.canonicalString)/0"])
        #expect(withFile.files.first?.isImage == true)
        let deleted = model.messages[1]
        #expect(deleted.text == "This message was deleted" && deleted.deleted && deleted.unreadable)
        #expect(!deleted.canChange)
    }

    @Test("the offline banner, the timer choices and the forms' links follow the state")
    func bannersAndLinks() {
        let waiting = Self.chat(
            [], connection: .waiting(retryIn: .seconds(4), reason: "connection refused"), timer: 300)
        #expect(waiting.offline == "cannot reach the server; trying again in 4 s")
        #expect(waiting.timer == "5 min")
        #expect(waiting.timers.filter(\.selected).map(\.seconds) == [300])
        #expect(Self.chat([]).offline == nil)
        #expect(Self.chat([]).timers.filter(\.selected).map(\.seconds) == [0])
        let peer = Self.bob.id.canonicalString
        #expect(waiting.links.send == "/chat/\(peer)/send")
        #expect(waiting.links.live == "/live/chat/\(peer)")
        #expect(waiting.peer.verify == "/chat/\(peer)/verify")
    }

    @Test("the verification page for each state, with a QR code link per device")
    func verification() {
        let unverified = VerifyPageModel(page: Self.page, peer: Self.bob, verification: nil)
        #expect(unverified.state == "unverified" && unverified.stateText == "Not verified yet.")
        #expect(unverified.devices.isEmpty)
    }

    @Test("a backup under way shows its progress; a failed one says why")
    func transfers() {
        let running = VaultTransfer(
            kind: .backup, target: "the server", progress: BackupProgress(object: 3, objects: 4), outcome: .running)
        let view = VaultTransferView(running)
        #expect(view?.running == true && view?.heading == "Backing up to the server…")
        #expect(view?.percent == 50 && view?.done == 3 && view?.total == 4, "object 3 of 4 is under way: two done")
        let failed = VaultTransferView(
            VaultTransfer(kind: .restore, target: "/media/usb", progress: nil, outcome: .failed("no backup there")))
        #expect(failed?.failed == true && failed?.heading == "Restore failed" && failed?.message == "no backup there")
        #expect(VaultTransferView(nil) == nil)
    }

    @Test("a step's title says where the user is: of two at sign-up, without the total at sign-in")
    func stepTitles() {
        func step(_ method: Components.Schemas.SignInMethod, _ number: Int) -> SignInStep {
            SignInStep(.init(method: method, number: number, prompt: "?"), now: Self.now)
        }
        #expect(WelcomePages.view(step(.emailCode, 2), signUp: true).title == "Step 2 of 2: confirm your e-mail")
        #expect(WelcomePages.view(step(.emailCode, 2), signUp: false).title == "Step 2: confirm your e-mail")
        #expect(WelcomePages.view(step(.arithmetic, 2), signUp: false).title == "Step 2: solve the challenge")
        #expect(WelcomePages.view(step(.totp, 3), signUp: false).title == "Step 3: your authenticator app")
    }

    @Test("sign-in methods and vault reports in a person's words")
    func words() {
        #expect(
            SignInMethod.allCases.map(\.displayName) == [
                "password", "arithmetic challenge", "e-mail code", "authenticator app", "biometrics",
            ])
        #expect(VaultViewModel.counted(1, "chapter") == "1 chapter")
        #expect(VaultViewModel.counted(3, "memory", plural: "memories") == "3 memories")
        #expect(VaultViewModel.counted(0, "new piece") == "0 new pieces")
    }

    @Test("day separators, groups and times: in the app's calendar, against its clock")
    func timeline() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        let now = try #require(calendar.date(from: DateComponents(year: 2026, month: 12, day: 2, hour: 15)))
        func line(_ text: String, _ direction: ChatMessage.Direction, _ at: Date) -> ChatMessage {
            ChatMessage(
                id: UUID(), sequence: 1, peer: Self.bob.id, direction: direction, sentAt: at, text: text,
                unreadableReason: nil, status: .received, isRead: true)
        }
        let lastYear = now.addingTimeInterval(-400 * 86_400)
        let yesterday = now.addingTimeInterval(-86_400)
        let lines = [
            line("old", .incoming, lastYear), line("a", .incoming, yesterday),
            line("b", .incoming, yesterday + 120), line("c", .outgoing, yesterday + 180),
            line("d", .outgoing, yesterday + 180 + 6 * 60), line("e", .outgoing, now - 60),
        ]
        let model = ChatPageModel(
            page: Self.page, peer: Self.bob, messages: lines, keyChangeBanner: nil, connection: .live,
            disappearingTimer: nil, maxUploadBytes: 1 << 20, now: now, calendar: calendar)
        #expect(model.messages.map(\.day) == ["28 October 2025", "Yesterday", nil, nil, nil, "Today"])
        #expect(
            model.messages.map(\.follows) == [false, false, true, false, false, false],
            "the same side within 5 minutes on one day")
        #expect(model.messages[1].time == "15:00")
        #expect(model.messages[1].fullTime == "Tuesday, 1 December 2026 at 15:00")
        #expect(ChatTimeline(calendar: calendar, now: now).dayLabel(now - 10 * 86_400) == "22 November")
    }

    @Test("a New messages divider before the first line unread when the chat opened, kept by the live region")
    func newMessagesDivider() throws {
        func line(_ text: String, _ direction: ChatMessage.Direction, read: Bool) -> ChatMessage {
            ChatMessage(
                id: UUID(), sequence: 1, peer: Self.bob.id, direction: direction, sentAt: Date(), text: text,
                unreadableReason: nil, status: .received, isRead: read)
        }
        let lines = [
            line("seen", .incoming, read: true), line("mine", .outgoing, read: true),
            line("new one", .incoming, read: false), line("new two", .incoming, read: false),
        ]
        func model(_ lines: [ChatMessage], unreadFrom: UUID? = nil) -> ChatPageModel {
            ChatPageModel(
                page: Self.page, peer: Self.bob, messages: lines, keyChangeBanner: nil, connection: .live,
                disappearingTimer: nil, maxUploadBytes: 1 << 20, unreadFrom: unreadFrom)
        }
        let opened = model(lines)
        #expect(opened.messages.map(\.startsUnread) == [false, false, true, false])
        #expect(opened.links.live.hasSuffix("?unread=\(lines[2].id.canonicalString)"), "\(opened.links.live)")
        // The live region reads the lines after the page marked them read: the divider stays put.
        let read = lines.map { line($0.text ?? "", $0.direction, read: true) }
        #expect(model(read).messages.allSatisfy { !$0.startsUnread }, "nothing unread, no divider")
        let live = model(read, unreadFrom: read[2].id)
        #expect(live.messages.map(\.startsUnread) == [false, false, true, false])
        #expect(!model(read).links.live.contains("unread="))
    }

    @Test("a reply shows its quote linked to the message, or marked deleted; each line offers a reply")
    func replyQuotes() throws {
        let target = UUID()
        func line(_ text: String, reply: ReplyQuote?, gone: Bool) -> ChatMessage {
            var message = ChatMessage(
                id: UUID(), sequence: 1, peer: Self.bob.id, direction: .incoming, sentAt: Date(), text: text,
                unreadableReason: nil, status: .received, isRead: true)
            message.reply = reply
            message.replyTargetGone = gone
            return message
        }
        let quote = ReplyQuote(messageID: target, excerpt: "lunch?")
        let lines = [
            line("plain", reply: nil, gone: false), line("yes", reply: quote, gone: false),
            line("still yes", reply: quote, gone: true),
        ]
        let model = ChatPageModel(
            page: Self.page, peer: Self.bob, messages: lines, keyChangeBanner: nil, connection: .live,
            disappearingTimer: nil, maxUploadBytes: 1 << 20)
        #expect(model.messages[0].quote == nil)
        #expect(
            model.messages[1].quote?.anchor == "#m-\(target.canonicalString)" && model.messages[1].quote?.gone == false)
        #expect(model.messages[2].quote?.excerpt == "lunch?" && model.messages[2].quote?.gone == true)
        #expect(model.messages[0].reply.hasSuffix("?reply=\(lines[0].id.canonicalString)"))
        #expect(ChatPageModel.Replying(lines[1])?.excerpt == "yes")
    }

    @Test("each line's menu: copy and edit only where they apply; delete always asks first")
    func messageMenus() {
        let model = Self.chat([
            Self.line("mine", .outgoing, .sent), Self.line("theirs", .incoming, .received),
            Self.line(
                nil, .incoming, .received,
                attachments: [
                    ChatAttachment(
                        id: UUID(), index: 0, name: "a.png", size: 1, contentType: "image/png", thumbnail: nil,
                        isLocal: true)
                ]),
            Self.line("gone", .outgoing, .sent, deleted: true),
        ])
        #expect(model.messages.map(\.canEdit) == [true, false, false, false])
        #expect(model.messages.map(\.canCopy) == [true, true, false, false])
        let first = model.messages[0]
        #expect(first.delete == "/chat/\(Self.bob.id.canonicalString)/messages/\(first.id)/delete")
    }

    @Test("a chat shows its latest 200 lines and offers 200 more while there may be some, up to 2,000")
    func earlierLines() throws {
        let full = (0..<200).map { Self.line("line \($0)", .incoming, .received) }
        let first = Self.chat(full)
        let peer = Self.bob.id.canonicalString
        #expect(first.links.earlier == "/chat/\(peer)?lines=400")
        #expect(first.links.live == "/live/chat/\(peer)")
        #expect(Self.chat(Array(full.prefix(199))).links.earlier == nil, "a shorter window is the whole conversation")
        let second = try #require(ChatWindow(lines: 400))
        let wider = ChatPageModel(
            page: Self.page, peer: Self.bob, messages: full + full, keyChangeBanner: nil, connection: .live,
            disappearingTimer: nil, maxUploadBytes: 1, window: second, now: Self.now)
        #expect(wider.links.earlier == "/chat/\(peer)?lines=600" && wider.links.live == "/live/chat/\(peer)?lines=400")
        let last = try #require(ChatWindow(lines: ChatWindow.maximum))
        #expect(last.larger == last)
        for refused in [0, 199, 201, 2_200, -200] { #expect(ChatWindow(lines: refused) == nil, "\(refused)") }
    }
}
