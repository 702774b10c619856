import AsyncHTTPClient
import ConfidantAPI
import ConfidantCrypto
import ConfidantServer
import ConfidantTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import OpenAPIRuntime
import Testing

/// The relay's HTTP API through the real app on loopback, on SQLite and (under Tests/run.sh) PostgreSQL.
@Suite("Relay routes")
struct RelayRouteTests {
    @Test("sign-up, sign-in, account, sign-out", arguments: TestDatabaseKind.allCases)
    func accounts(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let anonymous = relay.client()
            let alice = try await TestUser.make(relay, name: "alice")
            // Same address in other case: taken.
            let again = try await anonymous.signUp(
                body: .json(.init(email: alice.email.uppercased(), password: "another good password", displayName: "A"))
            )
            #expect(try again.problem == "email_taken 409")
            let weak = try await anonymous.signUp(
                body: .json(.init(email: "weak@example.com", password: "short", displayName: "W")))
            #expect(try weak.problem == "weak_password 400")
            let badMail = try await anonymous.signUp(
                body: .json(.init(email: "not-an-address", password: "long enough password", displayName: "B")))
            #expect(try badMail.problem == "invalid_email 400")
            // The seed's form: first and last name; the display name defaults to both.
            let named = try await anonymous.signUp(
                body: .json(
                    .init(
                        email: "named-\(UUID().uuidString.prefix(6))@example.com",
                        password: "long enough password", firstName: " Fox ", lastName: "Mulder")))
            #expect(try named.created.body.json.displayName == "Fox Mulder")
            let nameless = try await anonymous.signUp(
                body: .json(.init(email: "nameless@example.com", password: "long enough password")))
            #expect(try nameless.problem == "invalid_display_name 400")
            let control = try await anonymous.signUp(
                body: .json(
                    .init(
                        email: "control@example.com", password: "long enough password",
                        firstName: "A\u{7}", lastName: "B")))
            #expect(try control.problem == "invalid_name 400")

            let wrong = try await anonymous.signIn(
                body: .json(
                    try await .proving(
                        email: alice.email, password: "wrong password!!", identity: alice.identity, on: relay.client()))
            )
            #expect(try wrong.problem == "invalid_credentials 401")
            var forged = Array(alice.identity.publicIdentity.serialized)
            forged[40] ^= 1
            let badIdentity = try await anonymous.signIn(
                body: .json(
                    .init(
                        email: alice.email, password: alice.password, identity: .init(forged),
                        proof: try await .fresh(email: alice.email, identity: alice.identity, on: anonymous))))
            #expect(try badIdentity.problem == "invalid_identity 400")

            let account = try await alice.client.currentAccount().ok.body.json
            #expect(account.user.id == alice.id.canonicalString)
            #expect(account.deviceId == alice.identity.deviceID.canonicalString)
            _ = try await alice.client.signOut().noContent
            #expect(try await alice.client.currentAccount().problem == "unauthenticated 401")
        }
    }

    @Test("a message reaches the peer once, even when the send is retried", arguments: TestDatabaseKind.allCases)
    func messaging(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let messageID = UUID()
            let first = try await alice.send(
                "Привет, Bob", to: [(bob.address, bob.identity.publicIdentity)], messageID: messageID)
            #expect(first.stored == 1 && !first.duplicate)
            let retry = try await alice.send(
                "Привет, Bob", to: [(bob.address, bob.identity.publicIdentity)], messageID: messageID)
            #expect(retry.duplicate && retry.stored == 1)

            let conversations = try await bob.client.recentConversations().ok.body.json
            #expect(conversations.count == 1)
            #expect(conversations.first?.peer.id == alice.id.canonicalString)
            #expect(conversations.first?.unread == 1)

            let page = try await bob.client.fetchMailbox().ok.body.json
            #expect(page.entries.count == 1)
            let entry = try #require(page.entries.first)
            let envelope = try SealedEnvelope(serialized: try #require(entry.envelope).data)
            let text = try envelope.open(as: bob.identity, recipientUserID: bob.id, from: alice.identity.publicIdentity)
            #expect(String(decoding: text, as: UTF8.self) == "Привет, Bob")

            // Alice cannot acknowledge Bob's entry; Bob can.
            #expect(
                try await alice.client.acknowledge(body: .json(.init(cursors: [entry.cursor]))).ok.body.json
                    .acknowledged == 0)
            #expect(
                try await bob.client.acknowledge(body: .json(.init(cursors: [entry.cursor]))).ok.body.json.acknowledged
                    == 1)
            #expect(try await bob.client.fetchMailbox().ok.body.json.entries.isEmpty)
            #expect(try await bob.client.recentConversations().ok.body.json.first?.unread == 0)

            // Sending as someone else: the header names Bob as sender.
            let spoof = try SealedEnvelope.seal(
                Data("hi".utf8), from: bob.identity, senderUserID: bob.id, to: alice.identity.publicIdentity,
                recipientUserID: alice.id, messageID: messageID)
            let spoofed = try await alice.client.sendMessage(
                body: .json(
                    .init(
                        messageId: messageID.uuidString,
                        envelopes: [
                            .init(
                                recipientUserId: alice.id.uuidString,
                                recipientDeviceId: alice.identity.deviceID.uuidString, envelope: .init(spoof.serialized)
                            )
                        ])))
            #expect(try spoofed.problem == "sender_mismatch 403")
        }
    }

    @Test(
        "a second device and a replaced key: device_mismatch, key-change notices, key history",
        arguments: TestDatabaseKind.allCases)
    func devicesAndKeyChanges(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            _ = try await alice.send("hello", to: [(bob.address, bob.identity.publicIdentity)])
            let bobPhone = try await TestUser.signIn(
                relay, id: bob.id, email: bob.email, password: bob.password, identity: try PrivateIdentity.generate())
            // Alice's mailbox has a key-change notice: Bob added a device.
            let notices = try await alice.client.fetchMailbox().ok.body.json.entries.compactMap(\.keyChange)
            #expect(notices.map(\.change) == [.added])
            #expect(notices.first?.deviceId == bobPhone.identity.deviceID.canonicalString)

            // Sending to only one of Bob's devices is refused.
            let partial = try await alice.client.sendMessage(
                body: .json(
                    .init(
                        messageId: UUID().uuidString,
                        envelopes: [
                            .init(
                                recipientUserId: bob.id.uuidString, recipientDeviceId: bob.identity.deviceID.uuidString,
                                envelope: .init(
                                    try SealedEnvelope.seal(
                                        Data("x".utf8), from: alice.identity, senderUserID: alice.id,
                                        to: bob.identity.publicIdentity, recipientUserID: bob.id
                                    ).serialized))
                        ])))
            #expect(
                try partial.problem?.hasPrefix("device_mismatch ") == true
                    || partial.problem?.hasPrefix("envelope_mismatch ") == true)
            let devices = try await alice.client.getUser(path: .init(userId: bob.id.uuidString)).ok.body.json.devices
            #expect(devices.count == 2)
            let both = try await alice.send(
                "to both",
                to: [(bob.address, bob.identity.publicIdentity), (bobPhone.address, bobPhone.identity.publicIdentity)])
            #expect(both.stored == 2)

            // Bob signs in again on his laptop with new keys (the tunnel concept): replaced.
            let newKeys = try PrivateIdentity.generate(deviceID: bob.identity.deviceID)
            let plain = try await relay.client().signIn(
                body: .json(
                    try await .proving(email: bob.email, password: bob.password, identity: newKeys, on: relay.client()))
            )
            #expect(try plain.problem == "step_up_required 403", "a new key for a known device adds the e-mail code")
            let rekeyed = try await TestUser.signInWithCode(
                relay, email: bob.email, password: bob.password, identity: newKeys)
            #expect(rekeyed.keyChanged)
            let changes = try await alice.client.fetchMailbox().ok.body.json.entries.compactMap(\.keyChange).map(
                \.change)
            #expect(changes == [.added, .replaced])
            let history = try await alice.client.keyHistory(path: .init(userId: bob.id.uuidString)).ok.body.json
            #expect(history.count == 3)
            #expect(history.filter { $0.retiredAt != nil }.count == 1)
            // The old laptop key is no longer a valid recipient.
            let stale = try await alice.client.sendMessage(
                body: .json(
                    .init(
                        messageId: UUID().uuidString,
                        envelopes: [
                            (bob.address, bob.identity.publicIdentity),
                            (bobPhone.address, bobPhone.identity.publicIdentity),
                        ].map { address, key in
                            .init(
                                recipientUserId: address.userID.uuidString,
                                recipientDeviceId: address.deviceID.uuidString,
                                envelope: .init(
                                    try! SealedEnvelope.seal(
                                        Data("x".utf8), from: alice.identity, senderUserID: alice.id, to: key,
                                        recipientUserID: address.userID
                                    ).serialized))
                        })))
            #expect(
                try stale.problem?.hasPrefix("envelope_mismatch ") == true
                    || stale.problem?.hasPrefix("device_mismatch ") == true)

            // Removing the phone revokes its session and tells Alice.
            _ = try await bob.client.removeDevice(path: .init(deviceId: bobPhone.identity.deviceID.uuidString))
            #expect(try await bobPhone.client.fetchMailbox().problem == "unauthenticated 401")
            #expect(
                try await alice.client.fetchMailbox().ok.body.json.entries.compactMap(\.keyChange).last?.change
                    == .removed)
        }
    }

    @Test("the conversation list follows each pair's latest message, both ways", arguments: TestDatabaseKind.allCases)
    func conversationActivity(kind: TestDatabaseKind) async throws {
        let clock = ManualClock()
        try await TestRelay.run(kind, adjust: { $0.now = clock.now }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let carol = try await TestUser.make(relay, name: "carol")
            let toBob = [(bob.address, bob.identity.publicIdentity)]
            func list(_ user: TestUser) async throws -> [(peer: String, at: Date)] {
                try await user.client.recentConversations().ok.body.json.map { ($0.peer.id, $0.lastActivity) }
            }
            func near(_ date: Date?, _ expected: Date) -> Bool {
                date.map { abs($0.timeIntervalSince(expected)) < 1 } ?? false
            }

            let first = clock.now()
            _ = try await alice.send("one", to: toBob)
            clock.advance(by: 60)
            _ = try await carol.send("two", to: toBob)
            var bobs = try await list(bob)
            #expect(bobs.map(\.peer) == [carol.id.canonicalString, alice.id.canonicalString])
            #expect(near(bobs.last?.at, first))

            // The pair's row is there now: its time moves, in both directions, and no row is added.
            clock.advance(by: 60)
            let third = clock.now()
            _ = try await alice.send("three", to: toBob)
            bobs = try await list(bob)
            #expect(bobs.map(\.peer) == [alice.id.canonicalString, carol.id.canonicalString])
            #expect(near(bobs.first?.at, third))
            let alices = try await list(alice)
            #expect(alices.map(\.peer) == [bob.id.canonicalString])
            #expect(near(alices.first?.at, third))
        }
    }

    @Test("the directory lists everyone but the caller, pages and searches", arguments: TestDatabaseKind.allCases)
    func directory(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let me = try await TestUser.make(relay, name: "zed")
            var vera: TestUser?
            for name in ["anna", "anton", "boris", "vera", "ivan"] {
                let user = try await TestUser.make(relay, name: name)
                if name == "vera" { vera = user }
            }
            var seen: [String] = []
            var after: String?
            repeat {
                let page = try await me.client.listUsers(query: .init(limit: 2, after: after)).ok.body.json
                seen += page.users.map(\.email)
                after = page.next
            } while after != nil
            #expect(seen.count == 5)
            #expect(seen == seen.sorted())
            #expect(!seen.contains(me.email))
            let an = try await me.client.listUsers(query: .init(query: "AN")).ok.body.json.users.map(\.displayName)
            #expect(Set(an) == ["Anna", "Anton"])
            // A word of the name counts as well as its start: the last name finds its owner.
            _ = try await #require(vera).client.updateProfile(body: .json(.init(displayName: "Vera Dylan"))).ok
            let dyl = try await me.client.listUsers(query: .init(query: "DYL")).ok.body.json.users.map(\.displayName)
            #expect(dyl == ["Vera Dylan"])
            #expect(try await me.client.listUsers(query: .init(query: "ylan")).ok.body.json.users.isEmpty)
            #expect(try await me.client.getUser(path: .init(userId: UUID().uuidString)).problem == "not_found 404")
            #expect(try await me.client.getUser(path: .init(userId: "nope")).problem == "malformed_request 400")
            // A made-up cursor is refused as every other cursor is, whatever it decodes to.
            for cursor in [String(repeating: "A", count: 32), String(repeating: "A", count: 400), "YQ", "YUBi=", "!!"] {
                #expect(
                    try await me.client.listUsers(query: .init(after: cursor)).problem == "malformed_request 400",
                    "\(cursor)")
            }
        }
    }

    @Test(
        "blobs: streamed up and down, only for the owner and capability holders", arguments: TestDatabaseKind.allCases)
    func blobs(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind, adjust: { $0.maximumBlobBytes = 4 * 1024 * 1024 }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let carol = try await TestUser.make(relay, name: "carol")
            let bytes = (0..<(3 * 1024 * 1024 + 17)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let receipt = try await alice.client.uploadBlob(body: .binary(HTTPBody(bytes))).created.body.json
            #expect(receipt.size == Int64(bytes.count))
            let path = Operations.DownloadBlob.Input.Path(blobId: receipt.blobId)
            let own = try await alice.client.downloadBlob(path: path).ok.body.binary
            #expect(try await Array(collecting: own, upTo: 8 << 20) == bytes)
            #expect(try await bob.client.downloadBlob(path: path).problem == "not_found 404")

            let grant = try await alice.client.grantBlob(
                path: .init(blobId: receipt.blobId), body: .json(.init(recipientUserId: bob.id.uuidString))
            ).created.body.json
            let viaGrant = try await bob.client.downloadBlob(path: path, query: .init(capability: grant.capability)).ok
                .body.binary
            #expect(try await Array(collecting: viaGrant, upTo: 8 << 20) == bytes)
            // The capability is Bob's alone.
            #expect(
                try await carol.client.downloadBlob(path: path, query: .init(capability: grant.capability)).problem
                    == "not_found 404")
            #expect(try await bob.client.deleteBlob(path: .init(blobId: receipt.blobId)).problem == "not_found 404")

            let tooBig = try await alice.client.uploadBlob(
                body: .binary(HTTPBody([UInt8](repeating: 1, count: 4 * 1024 * 1024 + 1))))
            #expect(try tooBig.problem == "too_large 413")
            _ = try await alice.client.deleteBlob(path: .init(blobId: receipt.blobId)).noContent
            #expect(try await alice.client.downloadBlob(path: path).problem == "not_found 404")
            let leftovers = try FileManager.default.contentsOfDirectory(
                atPath: relay.directory.appendingPathComponent("blobs").path)
            #expect(leftovers.isEmpty)
        }
    }

    @Test("the name others see is changed by its owner only; bad names and empty changes are refused")
    func profileUpdate() async throws {
        try await TestRelay.run { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let user = try await alice.client.updateProfile(
                body: .json(.init(firstName: "Alice", lastName: "Pleasance", displayName: "  Alice P.  "))
            ).ok.body.json
            #expect(user.displayName == "Alice P." && user.id.lowercased() == alice.id.uuidString.lowercased())
            #expect(try await alice.client.currentAccount().ok.body.json.user.displayName == "Alice P.")
            let listed = try await bob.client.listUsers(query: .init(query: "alice p")).ok.body.json.users
            #expect(listed.map(\.displayName) == ["Alice P."], "the directory shows and searches the new name")
            #expect(
                try await bob.client.getUser(path: .init(userId: alice.id.uuidString)).ok.body.json.user.displayName
                    == "Alice P.")

            #expect(try await alice.client.updateProfile(body: .json(.init())).problem == "malformed_request 400")
            #expect(
                try await alice.client.updateProfile(body: .json(.init(displayName: "   "))).problem
                    == "invalid_display_name 400")
            #expect(
                try await alice.client.updateProfile(body: .json(.init(displayName: "bell\u{7}"))).problem
                    == "invalid_display_name 400")
            #expect(
                try await alice.client.updateProfile(body: .json(.init(firstName: String(repeating: "a", count: 51))))
                    .problem == "invalid_name 400")
            #expect(try await alice.client.currentAccount().ok.body.json.user.displayName == "Alice P.", "unchanged")
            // Bob's session changes Bob, whatever he sends.
            _ = try await bob.client.updateProfile(body: .json(.init(displayName: "Robert"))).ok
            #expect(try await alice.client.currentAccount().ok.body.json.user.displayName == "Alice P.")
        }
    }

    @Test(
        "an attachment goes once every device it was granted for has fetched it, or after its retention; others cannot confirm",
        arguments: TestDatabaseKind.allCases)
    func attachmentLifetime(kind: TestDatabaseKind) async throws {
        let clock = ManualClock()
        try await TestRelay.run(
            kind,
            adjust: {
                $0.now = clock.now
                $0.attachmentRetention = 3 * 86_400
            }
        ) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let carol = try await TestUser.make(relay, name: "carol")
            let receipt = try await alice.client.uploadBlob(body: .binary(HTTPBody([UInt8](repeating: 7, count: 1000))))
                .created.body.json
            let path = Operations.DownloadBlob.Input.Path(blobId: receipt.blobId)
            let fetched = Operations.ConfirmBlobFetched.Input.Path(blobId: receipt.blobId)
            let grant = try await alice.client.grantBlob(
                path: .init(blobId: receipt.blobId), body: .json(.init(recipientUserId: bob.id.uuidString))
            ).created.body.json
            // Carol holds no capability: for her the blob does not exist, and her word changes nothing.
            #expect(
                try await carol.client.confirmBlobFetched(path: fetched, query: .init(capability: grant.capability))
                    .problem == "not_found 404")
            #expect(try await bob.client.confirmBlobFetched(path: fetched).problem == "not_found 404")
            // The owner's own confirmation is not the recipient's.
            _ = try await alice.client.confirmBlobFetched(path: fetched).noContent
            _ = try await alice.client.downloadBlob(path: path).ok
            _ = try await bob.client.confirmBlobFetched(path: fetched, query: .init(capability: grant.capability))
                .noContent
            #expect(try await alice.client.downloadBlob(path: path).problem == "not_found 404", "gone once Bob has it")
            #expect(
                try await bob.client.downloadBlob(path: path, query: .init(capability: grant.capability)).problem
                    == "not_found 404")

            // One nobody fetched goes after the retention period.
            let kept = try await alice.client.uploadBlob(body: .binary(HTTPBody([UInt8](repeating: 8, count: 10))))
                .created.body.json
            let keptPath = Operations.DownloadBlob.Input.Path(blobId: kept.blobId)
            clock.advance(by: 2 * 86_400)
            try await relay.server.runMaintenance()
            _ = try await alice.client.downloadBlob(path: keptPath).ok
            clock.advance(by: 2 * 86_400)
            try await relay.server.runMaintenance()
            #expect(try await alice.client.downloadBlob(path: keptPath).problem == "not_found 404")
            let files = try FileManager.default.contentsOfDirectory(
                atPath: relay.directory.appendingPathComponent("blobs").path)
            #expect(files.filter { !$0.hasPrefix(".") }.isEmpty)
        }
    }

    @Test("avatars are checked by content and size")
    func avatars() async throws {
        try await TestRelay.run { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 0, count: 40)
            _ = try await alice.client.setAvatar(body: .png(HTTPBody(png))).noContent
            let back = try await alice.client.getAvatar(path: .init(userId: alice.id.uuidString)).ok.body
            guard case .png(let body) = back else {
                Issue.record("expected PNG")
                throw CancellationError()
            }
            #expect(try await Array(collecting: body, upTo: 1 << 20) == png)
            let gif = Array("GIF89a-not-a-png-or-jpeg-at-all".utf8)
            #expect(try await alice.client.setAvatar(body: .png(HTTPBody(gif))).problem == "unsupported_image 415")
            let huge = png + [UInt8](repeating: 0, count: 1024 * 1024)
            #expect(try await alice.client.setAvatar(body: .png(HTTPBody(huge))).problem == "too_large 413")
            #expect(try await alice.client.currentAccount().ok.body.json.user.hasAvatar)
        }
    }

    @Test("deleting an account removes it, its mailbox and blobs, and needs the password")
    func deleteAccount() async throws {
        let clock = ManualClock()
        try await TestRelay.run(adjust: {
            $0.now = clock.now
            $0.signInPolicy.baseDelay = 5
        }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            _ = try await bob.send("hi", to: [(alice.address, alice.identity.publicIdentity)])
            _ = try await alice.client.uploadBlob(body: .binary(HTTPBody([1, 2, 3]))).created
            #expect(
                try await alice.client.deleteAccount(body: .json(.init(password: "not my password"))).problem
                    == "invalid_credentials 401")
            #expect(
                try await alice.client.deleteAccount(body: .json(.init(password: alice.password))).problem
                    == "rate_limited 429")
            clock.advance(by: 6)
            _ = try await alice.client.deleteAccount(body: .json(.init(password: alice.password))).noContent
            #expect(try await alice.client.currentAccount().problem == "unauthenticated 401")
            #expect(try await bob.client.getUser(path: .init(userId: alice.id.uuidString)).problem == "not_found 404")
            #expect(try await bob.client.recentConversations().ok.body.json.isEmpty)
            #expect(
                try FileManager.default.contentsOfDirectory(
                    atPath: relay.directory.appendingPathComponent("blobs").path
                ).isEmpty)
            let again = try await relay.client().signIn(
                body: .json(
                    try await .proving(
                        email: alice.email, password: alice.password, identity: alice.identity, on: relay.client())))
            #expect(try again.problem == "invalid_credentials 401")
        }
    }

    @Test("failed sign-ins slow down, then lock, per account; the lock lifts", arguments: TestDatabaseKind.allCases)
    func signInThrottle(kind: TestDatabaseKind) async throws {
        let clock = ManualClock()
        try await TestRelay.run(
            kind,
            adjust: {
                $0.now = clock.now
                $0.signInPolicy.baseDelay = 3
                $0.signInPolicy.maximumDelay = 6
                $0.signInPolicy.lockoutThreshold = 3
                $0.signInPolicy.lockoutSeconds = 10
            }
        ) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let anonymous = relay.client()
            func attempt(_ password: String) async throws -> Operations.SignIn.Output {
                try await anonymous.signIn(
                    body: .json(
                        try await .proving(
                            email: alice.email, password: password, identity: alice.identity, on: relay.client())))
            }
            #expect(try await attempt("wrong password 1").problem == "invalid_credentials 401")
            // Right away again: must wait three seconds.
            #expect(try await attempt("wrong password 2").problem == "rate_limited 429")
            clock.advance(by: 2.5)
            #expect(try await attempt("wrong password 2").problem == "rate_limited 429")
            clock.advance(by: 1)
            #expect(try await attempt("wrong password 3").problem == "invalid_credentials 401")
            clock.advance(by: 7)
            #expect(try await attempt("wrong password 4").problem == "invalid_credentials 401")
            // Three failures: locked, even with the right password.
            #expect(try await attempt(alice.password).problem == "locked_out 429")
            clock.advance(by: 9.5)
            #expect(try await attempt(alice.password).problem == "locked_out 429")
            clock.advance(by: 1)
            _ = try await attempt(alice.password).created
        }
    }

    @Test("sign-ups from one address are throttled after the free allowance")
    func signUpThrottle() async throws {
        let clock = ManualClock()
        try await TestRelay.run(adjust: {
            $0.now = clock.now
            $0.freeSignUpsPerAddress = 3
            $0.signInPolicy.baseDelay = 5
        }) { relay in
            let anonymous = relay.client()
            for index in 0..<3 {
                _ = try await anonymous.signUp(
                    body: .json(
                        .init(email: "u\(index)@example.com", password: "long enough password", displayName: "U"))
                ).created
            }
            let blocked = try await anonymous.signUp(
                body: .json(.init(email: "u3@example.com", password: "long enough password", displayName: "U")))
            #expect(try blocked.problem == "rate_limited 429", "three free, the fourth waits")
            clock.advance(by: 6)
            _ = try await anonymous.signUp(
                body: .json(.init(email: "u3@example.com", password: "long enough password", displayName: "U"))
            ).created
        }
    }
}

// MARK: - Reading problems out of generated outputs

protocol ProblemOutput {
    /// `"error status"` (e.g. `"not_found 404"`) when the response was a Problem.
    var problem: String? { get throws }
}

extension ProblemOutput {
    static func extract(_ output: Any) throws -> String? {
        let mirror = Mirror(reflecting: output)
        guard let child = mirror.children.first, mirror.displayStyle == .enum, child.label == "default" else {
            return nil
        }
        let tuple = Mirror(reflecting: child.value).children.map(\.value)
        guard tuple.count == 2, let status = tuple[0] as? Int, let response = tuple[1] as? Components.Responses.Problem,
            case .json(let problem) = response.body
        else { return nil }
        #expect(!problem.message.isEmpty)
        return "\(problem.error) \(status)"
    }

    var problem: String? { get throws { try Self.extract(self) } }
}

extension Operations.SignUp.Output: ProblemOutput {}
extension Operations.SignIn.Output: ProblemOutput {}
extension Operations.SignOut.Output: ProblemOutput {}
extension Operations.UpdateProfile.Output: ProblemOutput {}
extension Operations.CurrentAccount.Output: ProblemOutput {}
extension Operations.DeleteAccount.Output: ProblemOutput {}
extension Operations.SetAvatar.Output: ProblemOutput {}
extension Operations.GetAvatar.Output: ProblemOutput {}
extension Operations.ListUsers.Output: ProblemOutput {}
extension Operations.GetUser.Output: ProblemOutput {}
extension Operations.KeyHistory.Output: ProblemOutput {}
extension Operations.RemoveDevice.Output: ProblemOutput {}
extension Operations.SendMessage.Output: ProblemOutput {}
extension Operations.FetchMailbox.Output: ProblemOutput {}
extension Operations.Acknowledge.Output: ProblemOutput {}
extension Operations.RecentConversations.Output: ProblemOutput {}
extension Operations.UploadBlob.Output: ProblemOutput {}
extension Operations.DownloadBlob.Output: ProblemOutput {}
extension Operations.DeleteBlob.Output: ProblemOutput {}
extension Operations.GrantBlob.Output: ProblemOutput {}
extension Operations.ConfirmBlobFetched.Output: ProblemOutput {}
extension Operations.UploadPrekeys.Output: ProblemOutput {}
extension Operations.PrekeyStatus.Output: ProblemOutput {}
extension Operations.ClaimPrekeyBundles.Output: ProblemOutput {}

@Suite("Relay group commit")
struct RelayGroupCommitTests {
    @Test(
        "concurrent sends, retries and a refused message in the same groups: each gets its own answer",
        arguments: TestDatabaseKind.allCases)
    func concurrentSends(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let carol = try await TestUser.make(relay, name: "carol")
            let ids = (0..<40).map { _ in UUID() }
            let receipts = try await withThrowingTaskGroup(of: (UUID, Bool).self) { group in
                for id in ids + ids.prefix(20) {  // the first 20 twice, at the same time
                    group.addTask {
                        let receipt = try await alice.send(
                            "m \(id)", to: [(bob.address, bob.identity.publicIdentity)], messageID: id)
                        return (id, receipt.duplicate)
                    }
                }
                group.addTask {
                    // Addressed to Carol's device but claiming to be for Bob: refused alone.
                    let wrongID = UUID()
                    let wrong = try await alice.client.sendMessage(
                        body: .json(
                            .init(
                                messageId: wrongID.uuidString,
                                envelopes: [
                                    .init(
                                        recipientUserId: bob.id.uuidString,
                                        recipientDeviceId: carol.identity.deviceID.uuidString,
                                        envelope: .init(
                                            try SealedEnvelope.seal(
                                                Data("x".utf8), from: alice.identity, senderUserID: alice.id,
                                                to: carol.identity.publicIdentity, recipientUserID: bob.id,
                                                messageID: wrongID
                                            ).serialized))
                                ])))
                    #expect(try wrong.problem == "device_mismatch 409", "\(wrong)")
                    return (UUID(), true)
                }
                var all: [(UUID, Bool)] = []
                for try await receipt in group { all.append(receipt) }
                return all
            }
            for id in ids {
                let answers = receipts.filter { $0.0 == id }
                #expect(answers.filter { !$0.1 }.count == 1, "exactly one first store of \(id)")
            }
            var stored: [String] = []
            var after: Int64 = 0
            while true {
                let page = try await bob.client.fetchMailbox(query: .init(after: after, limit: 500)).ok.body.json
                stored += page.entries.compactMap(\.messageId)
                after = page.entries.last?.cursor ?? after
                if !page.hasMore { break }
            }
            #expect(stored.count == 40)
            #expect(Set(stored) == Set(ids.map { $0.canonicalString }))
        }
    }
}

@Suite("Relay authorization between users")
struct RelayCrossUserTests {
    @Test("one user cannot remove another's device, grant another's blob or read another's mailbox")
    func crossUser() async throws {
        try await TestRelay.run { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let mallory = try await TestUser.make(relay, name: "mallory")
            _ = try await mallory.send("hi", to: [(alice.address, alice.identity.publicIdentity)])
            #expect(
                try await mallory.client.removeDevice(path: .init(deviceId: alice.identity.deviceID.uuidString)).problem
                    == "not_found 404")
            #expect(
                try await alice.client.getUser(path: .init(userId: alice.id.uuidString)).ok.body.json.devices.count == 1
            )
            let blob = try await alice.client.uploadBlob(body: .binary(HTTPBody([9, 9, 9]))).created.body.json
            #expect(
                try await mallory.client.grantBlob(
                    path: .init(blobId: blob.blobId), body: .json(.init(recipientUserId: mallory.id.uuidString))
                ).problem == "not_found 404")
            // Mallory's mailbox is her own: Alice's entry is not in it, and her cursor acknowledges nothing of Alice's.
            let alicesEntry = try #require(try await alice.client.fetchMailbox().ok.body.json.entries.first)
            #expect(
                try await mallory.client.fetchMailbox().ok.body.json.entries.allSatisfy {
                    $0.cursor != alicesEntry.cursor
                })
            #expect(
                try await mallory.client.acknowledge(body: .json(.init(cursors: [alicesEntry.cursor]))).ok.body.json
                    .acknowledged == 0)
            #expect(try await alice.client.fetchMailbox().ok.body.json.entries.count == 1)
        }
    }
}

@Suite("Relay cursors")
struct RelayCursorTests {
    @Test(
        "cursors are never reused after an emptied mailbox, so resuming after the last one misses nothing",
        arguments: TestDatabaseKind.allCases)
    func cursorsGrow(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            var last: Int64 = 0
            for round in 0..<3 {
                _ = try await alice.send("round \(round)", to: [(bob.address, bob.identity.publicIdentity)])
                let entries = try await bob.client.fetchMailbox(query: .init(after: last)).ok.body.json.entries
                #expect(entries.count == 1, "round \(round): the new entry comes after cursor \(last)")
                let cursor = try #require(entries.first?.cursor)
                #expect(cursor > last)
                #expect(
                    try await bob.client.acknowledge(body: .json(.init(cursors: [cursor]))).ok.body.json.acknowledged
                        == 1)
                last = cursor
            }
        }
    }
}
