import ConfidantAuth
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantKit

@MainActor
@Suite("View models against a real relay")
struct ViewModelTests {
    /// A sign-up form filled in for `first last` at the relay, with an e-mail of its own.
    static func signUpForm(_ profile: TestProfile, _ relay: TestRelay, first: String, last: String) -> AuthViewModel {
        let model = AuthViewModel(profile: profile.storage, passphrase: TestProfile.passphrase)
        model.mode = .signUp
        model.serverAddress = relay.baseURL.absoluteString
        model.email = "\(first.lowercased())-\(UUID().uuidString.prefix(6))@example.com"
        model.password = "a long enough password"
        model.firstName = first
        model.lastName = last
        return model
    }

    /// Submits the form and answers the e-mail code the relay mails, as the user would.
    static func submitAnsweringCode(_ model: AuthViewModel, _ relay: TestRelay) async throws {
        let submitting = Task { await model.submit() }
        try await waitUntil { model.pendingStep?.method == .emailCode }
        model.stepAnswer = try SignInOutbox.latestCode(dataDirectory: relay.directory, for: model.email)
        model.answerStep()
        await submitting.value
    }

    @Test("sign-up by invite: a missing or wrong code is the invite field's error; the right one signs up")
    func inviteSignUp() async throws {
        try await TestRelay.run(adjust: { $0.registration = .invite }) { relay in
            let profile = TestProfile()
            defer { profile.remove() }
            let model = Self.signUpForm(profile, relay, first: "In", last: "Vited")
            await model.submit()
            #expect(model.fieldErrors[.invite]?.contains("invite only") == true, "\(model.fieldErrors)")
            model.invite = "AAAA-BBBB-CCCC-DDDD-EEEE"
            await model.submit()
            #expect(model.fieldErrors[.invite]?.contains("not valid") == true, "\(model.fieldErrors)")
            let (code, _) = try await relay.server.administration(as: "test").createInvite(uses: 1, lifetime: 86_400)
            // The operator's link pasted as the server: the server and the code come from it.
            model.invite = ""
            model.serverAddress = relay.baseURL.absoluteString + "/join?code=\(code)"
            try await Self.submitAnsweringCode(model, relay)
            #expect(model.fieldErrors.isEmpty)
            #expect(model.serverAddress == relay.baseURL.absoluteString && model.invite == code)
            #expect(await model.messenger?.account.displayName == "In Vited")
        }
    }

    @Test("sign-up and sign-in: local field errors, server field errors, a general error for bad credentials")
    func auth() async throws {
        try await TestRelay.run { relay in
            let profile = TestProfile()
            defer { profile.remove() }
            let model = AuthViewModel(profile: profile.storage, passphrase: TestProfile.passphrase)
            model.mode = .signUp
            model.serverAddress = "not a url"
            model.email = "bad@"
            model.password = "short"
            await model.submit()
            #expect(Set(model.fieldErrors.keys) == [.server, .email, .password, .firstName, .lastName])
            #expect(model.messenger == nil)

            model.serverAddress = relay.baseURL.absoluteString
            model.email = "Dana-\(UUID().uuidString.prefix(6))@Example.com"
            model.password = "a long enough password"
            model.firstName = "Dana"
            model.lastName = "Scully"
            // The server mails a code to prove the address: the model asks for it as a step.
            try await Self.submitAnsweringCode(model, relay)
            #expect(model.fieldErrors.isEmpty)
            #expect(await model.messenger?.account.displayName == "Dana Scully")
            #expect(model.password.isEmpty)

            let other = TestProfile()
            defer { other.remove() }
            let again = AuthViewModel(profile: other.storage, passphrase: TestProfile.passphrase)
            again.mode = .signUp
            again.serverAddress = relay.baseURL.absoluteString
            again.email = model.email.lowercased()
            again.password = "another long password"
            again.firstName = "Dana"
            again.lastName = "Two"
            await again.submit()
            #expect(again.fieldErrors[.email] != nil, "a taken e-mail is the e-mail field's error")

            again.mode = .signIn
            again.password = "the wrong password"
            await again.submit()
            #expect(again.generalError == "Wrong e-mail or password")
            #expect(again.messenger == nil)
        }
    }

    @Test(
        "conversations newest first with time ago and unread counts, live without refreshing; new message lists others and searches"
    )
    func conversationsAndDirectory() async throws {
        try await TestRelay.run { relay in
            let alice = try await KitUser.register(relay, name: "Alice")
            let bob = try await KitUser.register(relay, name: "Bob")
            let carol = try await KitUser.register(relay, name: "Carol")
            defer {
                Task {
                    await alice.remove()
                    await bob.remove()
                    await carol.remove()
                }
            }
            _ = try await bob.messenger.send("from bob", to: bob.messenger.contact(email: alice.email))
            let clock = ManualClock()
            let model = ConversationsViewModel(messenger: alice.messenger, now: clock.now)
            let running = Task { await model.run(updatingTimesEvery: .seconds(3600)) }
            defer { running.cancel() }
            await alice.messenger.startLive()
            try await waitUntil { model.rows.map(\.summary.peer.displayName) == ["Bob"] }
            // The model learns of the connection from the messenger's connection updates, which may
            // come after the rows (the store is observed separately): wait for it rather than race it.
            try await waitUntil { model.connection == .live }
            // Carol writes: her conversation appears on top, live, with its unread count.
            _ = try await carol.messenger.send("from carol 1", to: carol.messenger.contact(email: alice.email))
            _ = try await carol.messenger.send("from carol 2", to: carol.messenger.contact(email: alice.email))
            try await waitUntil { model.rows.first?.summary.unread == 2 }
            #expect(model.error == nil)
            #expect(model.rows.map(\.summary.peer.displayName) == ["Carol", "Bob"])
            #expect(model.rows.map(\.summary.unread) == [2, 1])
            #expect(model.rows.first?.summary.preview == "from carol 2")
            #expect(model.rows.map(\.timeAgo) == ["just now", "just now"])
            clock.advance(by: 630)  // the messages were written a moment after the clock started
            model.updateTimes()
            #expect(model.rows.map(\.timeAgo) == ["10 min ago", "10 min ago"])
            // Reading a conversation clears its count, live.
            try await alice.messenger.markRead(try alice.messenger.contact(email: carol.email).id)
            try await waitUntil { model.rows.first?.summary.unread == 0 }

            let directory = NewMessageViewModel(messenger: alice.messenger)
            await directory.load()
            #expect(Set(directory.users.map(\.displayName)) == ["Bob", "Carol"])
            directory.query = "car"
            await directory.load()
            #expect(directory.users.map(\.displayName) == ["Carol"])

            await model.signOut()
            #expect(model.isSignedOut)
        }
    }

    @Test("chat: history, send, live incoming, the key-change banner, and unreadable placeholders")
    func chat() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email)
            let chat = ChatViewModel(messenger: alice.messenger, peer: toBob)
            await chat.load()
            #expect(chat.messages.isEmpty)
            let listening = Task { await chat.run() }
            defer { listening.cancel() }
            #expect(await alice.messenger.goLive())

            chat.draft = "hi Bob"
            await chat.send()
            #expect(chat.draft.isEmpty)
            #expect(chat.messages.map(\.text) == ["hi Bob"])
            #expect(chat.messages.first?.status == .sent)

            _ = try await bob.messenger.send("hi Alice", to: bob.messenger.contact(email: alice.email))
            try await waitUntil { chat.messages.count == 2 }
            #expect(chat.messages.last?.text == "hi Alice")
            #expect(chat.messages.last?.direction == .incoming)
            // An open chat marks what arrives as read.
            try await waitUntil { chat.messages.last?.isRead == true }
            #expect(chat.keyChangeBanner == nil)

            // Bob signs in on a new device: the banner appears live, and goes when Alice writes again.
            try await KitUser.removing(try await bob.secondDevice(relay)) { tablet in
                try await waitUntil { chat.keyChangeBanner != nil }
                #expect(
                    chat.keyChangeBanner
                        == "Bob's security key changed — messages sent to the old device can't be read there")
                chat.draft = "welcome, new device"
                await chat.send()
                #expect(chat.keyChangeBanner == nil)
                #expect(try await tablet.messenger.sync().map(\.text) == ["welcome, new device"])
            }
        }
    }

    @Test("an open chat follows the conversation's timer, set by the peer or here, and shows the notice")
    func openChatFollowsTheTimer() async throws {
        try await RichMessageTests.withPair { _, alice, bob, _ in
            let toBob = try await alice.messenger.contact(email: bob.email)
            let toAlice = try await bob.messenger.contact(email: alice.email)
            let chat = ChatViewModel(messenger: alice.messenger, peer: toBob)
            await chat.load()
            #expect(chat.disappearingTimer == nil)
            let running = Task { await chat.run() }
            defer { running.cancel() }
            try await waitUntil { alice.messenger.openChats.now.peers == [toBob.id] }

            try await bob.messenger.setDisappearingTimer(60, with: toAlice)
            _ = try await bob.messenger.flushOutbox()
            _ = try await alice.messenger.sync()
            try await waitUntil { chat.disappearingTimer == 60 }
            try await waitUntil { chat.messages.last?.text == "Bob set disappearing messages to 1 min" }

            // Messages that arrive meanwhile leave it as it is.
            _ = try await bob.messenger.send("still here", to: toAlice)
            _ = try await alice.messenger.sync()
            try await waitUntil { chat.messages.last?.text == "still here" }
            #expect(chat.disappearingTimer == 60)

            try await alice.messenger.setDisappearingTimer(nil, with: toBob)
            try await waitUntil { chat.disappearingTimer == nil }
            #expect(chat.error == nil)
        }
    }

    @Test(
        "a chat on screen stores what arrives as read and answers with a read receipt; with read receipts off, a delivery receipt"
    )
    func openChatReadsArrivals() async throws {
        try await RichMessageTests.withPair { _, alice, bob, _ in
            let toBob = try await alice.messenger.contact(email: bob.email)
            let toAlice = try await bob.messenger.contact(email: alice.email)
            // No chat open: what arrives waits unread.
            _ = try await bob.messenger.send("before", to: toAlice)
            #expect(try await alice.messenger.sync().map(\.isRead) == [false])

            let chat = ChatViewModel(messenger: alice.messenger, peer: toBob)
            let running = Task { await chat.run() }
            try await waitUntil { alice.messenger.openChats.now.peers == [toBob.id] }
            _ = try await bob.messenger.send("while open", to: toAlice)
            #expect(try await alice.messenger.sync().map(\.isRead) == [true], "stored read")
            _ = try await alice.messenger.flushOutbox()
            _ = try await bob.messenger.sync()
            #expect(try await bob.messenger.history(with: alice.messenger.me).last?.status == .read)

            // Read receipts off: still read on screen, but the sender only learns it was delivered.
            try await alice.messenger.setReadReceipts(false)
            _ = try await bob.messenger.send("quietly", to: toAlice)
            #expect(try await alice.messenger.sync().map(\.isRead) == [true])
            _ = try await alice.messenger.flushOutbox()
            _ = try await bob.messenger.sync()
            #expect(try await bob.messenger.history(with: alice.messenger.me).last?.status == .delivered)

            // Closed again: arrivals wait unread.
            running.cancel()
            await running.value
            #expect(alice.messenger.openChats.now.peers.isEmpty)
            _ = try await bob.messenger.send("after", to: toAlice)
            #expect(try await alice.messenger.sync().map(\.isRead) == [false])
        }
    }

    @Test("a device signing in to the account is announced on its other devices until dismissed")
    func newDeviceNotice() async throws {
        try await TestRelay.run { relay in
            try await KitUser.removing(try await KitUser.register(relay, name: "Alice")) { alice in
                let model = ConversationsViewModel(messenger: alice.messenger)
                let running = Task { await model.run() }
                defer { running.cancel() }
                #expect(model.accountNotices.isEmpty, "her own first device is no news")

                try await KitUser.removing(try await alice.secondDevice(relay)) { laptop in
                    _ = try await alice.messenger.sync()
                    try await waitUntil { !model.accountNotices.isEmpty }
                    let shortID = String(laptop.messenger.identity.deviceID.canonicalString.prefix(8))
                    #expect(
                        model.accountNotices == [
                            "A new device (\(shortID)) signed in to your account. If it was not you, remove it and change your password."
                        ])
                    #expect(model.rows.isEmpty, "the account's notices are no conversation")
                    #expect(
                        try await laptop.messenger.accountNotices().isEmpty, "the new device is not told about itself")

                    await model.dismissAccountNotices()
                    #expect(model.accountNotices.isEmpty)
                    // Seen, but kept: the full list still has it.
                    #expect(try await alice.messenger.accountNotices(all: true).count == 1)
                }
            }
        }
    }

    @Test(
        "sign-in with a chain: the view model asks each step, a wrong answer brings a new challenge, a new device adds the e-mail code"
    )
    func steppedSignIn() async throws {
        try await TestRelay.run(adjust: { $0.signInPolicy.baseDelay = 0 }) { relay in
            try await KitUser.removing(try await KitUser.register(relay, name: "Alice")) { alice in
                let mapping = "+=*,-=/,*=+,/=-"
                let settings = try await alice.messenger.updateSignInSettings(
                    .init(chain: [.password, .arithmetic], operands: 3, mapping: mapping),
                    password: alice.password)
                #expect(settings.chain == [.password, .arithmetic])

                let profile = TestProfile()
                defer { profile.remove() }
                let model = AuthViewModel(profile: profile.storage, passphrase: TestProfile.passphrase)
                model.serverAddress = relay.baseURL.absoluteString
                model.email = alice.email
                model.password = alice.password
                let submitting = Task { await model.submit() }
                try await waitUntil { model.pendingStep?.method == .arithmetic }
                model.stepAnswer = "not a number"
                model.answerStep()
                try await waitUntil { model.pendingStep?.method == .arithmetic }
                let challenge = try ArithmeticChallenge(parsing: try #require(model.pendingStep?.challenge))
                #expect(challenge.operands.count == 3)
                model.stepAnswer = String(try #require(challenge.answer(under: ArithmeticMapping(parsing: mapping))))
                model.answerStep()
                try await waitUntil { model.pendingStep?.method == .emailCode }
                model.stepAnswer = try SignInOutbox.latestCode(dataDirectory: relay.directory)
                model.answerStep()
                await submitting.value
                #expect(model.generalError == nil)
                #expect(model.messenger != nil)
            }
        }
    }

    @Test(
        "an e-mail code is sent again on request: refused with the wait during the cool-down, then a new code that replaces the old"
    )
    func resendCode() async throws {
        let clock = ManualClock()
        try await TestRelay.run(adjust: { $0.now = clock.now }) { relay in
            let profile = TestProfile()
            defer { profile.remove() }
            let model = Self.signUpForm(profile, relay, first: "Erin", last: "Example")
            let submitting = Task { await model.submit() }
            try await waitUntil { model.pendingStep?.method == .emailCode }
            let first = try #require(model.pendingStep)
            let wait = try #require(first.resendAvailableAt).timeIntervalSinceNow
            #expect(wait > 50 && wait <= 60, "the step says when a new code may be asked for")
            let firstCode = try SignInOutbox.latestCode(dataDirectory: relay.directory, for: model.email)

            model.resendCode()  // too soon
            try await waitUntil { model.pendingStep != nil }
            #expect(
                model.pendingStep?.problem?.contains("ask again in") == true, "\(String(describing: model.pendingStep))"
            )
            #expect(try SignInOutbox.latestCode(dataDirectory: relay.directory, for: model.email) == firstCode)

            clock.advance(by: 61)
            let resentAt = Date().addingTimeInterval(-0.001)
            model.resendCode()
            try await waitUntil { model.pendingStep != nil }
            #expect(model.pendingStep?.notice?.contains("new code") == true)
            #expect(model.pendingStep?.problem == nil)
            let secondCode = try await SignInOutbox.code(
                dataDirectory: relay.directory, for: model.email, sentAfter: resentAt)
            if secondCode != firstCode {
                // The first code no longer works.
                model.stepAnswer = firstCode
                model.answerStep()
                try await waitUntil { model.pendingStep != nil }
                #expect(model.pendingStep?.problem != nil)
                clock.advance(by: 61)  // past the pause after a wrong answer
            }
            model.stepAnswer = secondCode
            model.answerStep()
            await submitting.value
            #expect(model.generalError == nil)
            #expect(model.messenger != nil)
        }
    }
}
