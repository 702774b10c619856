import ConfidantCrypto
import ConfidantTestSupport
import Crypto
import Foundation
import GRDB
import Testing

@testable import ConfidantKit

@Suite("Attachments, receipts, edits, deletions and disappearing messages against a real relay")
struct RichMessageTests {
    /// A scratch directory for files, removed afterwards.
    struct Files {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-files-\(UUID())")
        init() throws { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }
        func write(_ name: String, _ bytes: Data) throws -> URL {
            let url = directory.appendingPathComponent(name)
            try bytes.write(to: url)
            return url
        }
        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    /// A relay with Alice and Bob registered, and a scratch directory; all removed afterwards.
    static func withPair(
        isolation: isolated (any Actor)? = #isolation, _ body: (TestRelay, KitUser, KitUser, Files) async throws -> Void
    ) async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let files = try Files()
            defer { files.remove() }
            try await body(relay, alice, bob, files)
        }
    }

    static func bytes(_ count: Int, seed: UInt8) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
    }

    @Test(
        "attachments of 0, 1 and 3 MiB bytes arrive byte-identical; the relay holds no name or plaintext and drops the blob once fetched"
    )
    func attachments() async throws {
        try await Self.withPair { relay, alice, bob, files in
            let marker = Data("UNMISTAKABLE-ATTACHMENT-PLAINTEXT".utf8)
            let big = marker + Self.bytes(3 << 20, seed: 9) + marker
            let sources = [
                try files.write("empty.bin", Data()), try files.write("one.bin", Data([42])),
                try files.write("secret-holiday-name.bin", big),
            ]
            let sent = try await alice.messenger.send(
                "three files", attachments: sources.map { AttachmentSource(url: $0) }, to: bob.contact)
            #expect(sent.status == .sent)
            #expect(sent.attachments.map(\.name) == ["empty.bin", "one.bin", "secret-holiday-name.bin"])
            #expect(sent.attachments.allSatisfy { $0.isLocal })

            // Nothing the relay stores names the file or holds its bytes.
            for url in try Self.files(in: relay.directory) {
                let data = try Data(contentsOf: url)
                #expect(data.range(of: marker) == nil, "plaintext in \(url.lastPathComponent)")
                #expect(data.range(of: Data("secret-holiday-name".utf8)) == nil, "the name in \(url.lastPathComponent)")
            }

            let received = try await bob.messenger.sync()
            let message = try #require(received.first { $0.text == "three files" })
            #expect(message.attachments.map(\.size) == [0, 1, big.count])
            #expect(!message.attachments.contains { $0.isLocal })
            // Two readers of one attachment at once (a page drawn twice): one download serves both.
            async let firstReader = bob.messenger.attachmentReader(of: message.id, index: 2)
            async let secondReader = bob.messenger.attachmentReader(of: message.id, index: 2)
            let (first, second) = try await (firstReader, secondReader)
            #expect(try first.1.read(0..<32) == big.prefix(32) && second.1.size == big.count)
            let out = files.directory.appendingPathComponent("bob")
            for (index, source) in sources.enumerated() {
                let saved = try await bob.messenger.saveAttachment(of: message.id, index: index, to: out)
                #expect(try Data(contentsOf: saved) == Data(contentsOf: source), "\(saved.lastPathComponent)")
            }
            #expect(
                try Set(FileManager.default.contentsOfDirectory(atPath: out.path))
                    == ["empty.bin", "one.bin", "secret-holiday-name.bin"])
            // Saving again does not overwrite: a free name.
            let again = try await bob.messenger.saveAttachment(of: message.id, index: 1, to: out)
            #expect(again.lastPathComponent == "one-1.bin")
            // Bob's device was the only one the files were granted for: the relay dropped them.
            let blobs = relay.directory.appendingPathComponent("blobs")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: blobs.path).filter { !$0.hasPrefix(".") }.isEmpty)
            // Alice still has her copies (kept encrypted on her device).
            let mine = try await alice.messenger.saveAttachment(
                of: message.id, index: 2, to: files.directory.appendingPathComponent("alice"))
            #expect(try Data(contentsOf: mine) == big)
            await #expect(throws: ConfidantKitError.messageNotFound(message.id)) {
                try await bob.messenger.saveAttachment(of: message.id, index: 3, to: out)
            }
        }
    }

    @Test("a message with more files than one carries is refused by their count, with nothing stored or encrypted")
    func tooManyAttachments() async throws {
        try await Self.withPair { _, alice, bob, files in
            let limit = ChatPayload.maximumAttachments
            let sources = try (0...limit).map { index in
                AttachmentSource(url: try files.write("file-\(index).txt", Data("file \(index)".utf8)))
            }
            await #expect(throws: ConfidantKitError.tooManyAttachments(count: limit + 1, limit: limit)) {
                try await alice.messenger.send("too many", attachments: sources, to: bob.contact)
            }
            #expect(
                ConfidantKitError.tooManyAttachments(count: 33, limit: 32).description
                    == "the message has 33 files; one message carries at most 32")
            #expect(try await alice.messenger.history(with: bob.contact.id).isEmpty)
            let folder = alice.profile.directory.appendingPathComponent("attachments")
            #expect((try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.isEmpty ?? true)
            // At the limit the files go.
            let sent = try await alice.messenger.send(
                "just enough", attachments: Array(sources.prefix(limit)), to: bob.contact)
            #expect(sent.attachments.count == limit)
        }
    }

    @Test(
        "a peer who reuses the id of one of your attachments and then deletes their message removes nothing of yours"
    )
    func attachmentIDsAreScoped() async throws {
        try await Self.withPair { _, alice, bob, files in
            let source = try files.write("photo.jpg", Self.bytes(50_000, seed: 4))
            let mine = try await alice.messenger.send(
                "mine", attachments: [AttachmentSource(url: source)], to: bob.contact)
            let aliceID = await alice.messenger.me
            #expect(try await alice.messenger.history(with: bob.contact.id).first?.attachments.first?.isLocal == true)
            // Bob knows the pointer (id, blob, key) from Alice's message; he sends it back as his own.
            _ = try await bob.messenger.sync()
            let received = try #require(try await bob.messenger.history(with: aliceID).first)
            let pointer = try #require(
                try bob.messenger.store.read { db in
                    try bob.messenger.store.attachments(of: received.id, peer: aliceID, direction: .incoming, db)
                }.first)
            let copy = UUID.timeOrdered()
            _ = try bob.messenger.store.queue(
                LocalStore.NewMessage(
                    id: copy, peer: aliceID, direction: .outgoing, senderDevice: bob.messenger.identity.deviceID,
                    sentAt: Date(), text: "look", unreadableReason: nil, state: .pending, attachments: [pointer]),
                confirmed: false, now: Date())
            _ = try await bob.messenger.flushOutbox()
            _ = try await alice.messenger.sync()
            #expect(try await alice.messenger.history(with: bob.contact.id).contains { $0.id == copy })
            try await bob.messenger.deleteForEveryone(copy)
            _ = try await alice.messenger.sync()
            let own = try #require(try await alice.messenger.history(with: bob.contact.id).first { $0.id == mine.id })
            #expect(own.attachments.first?.isLocal == true, "Alice's own copy of her file is still on her device")
            // And a lookup names the conversation: Bob's message id is not found in another chat.
            await #expect(throws: ConfidantKitError.messageNotFound(mine.id)) {
                try await alice.messenger.attachmentReader(of: mine.id, index: 0, with: UUID())
            }
        }
    }

    @Test("a tampered or truncated attachment is reported and nothing is written")
    func tamperedAttachment() async throws {
        try await Self.withPair { relay, alice, bob, files in
            let source = try files.write("photo.jpg", Self.bytes(200_000, seed: 3))
            _ = try await alice.messenger.send(nil, attachments: [AttachmentSource(url: source)], to: bob.contact)
            let message = try #require(try await bob.messenger.sync().first)
            #expect(message.displayText == "📎 photo.jpg")
            let blobs = relay.directory.appendingPathComponent("blobs")
            let blob = try #require(try FileManager.default.contentsOfDirectory(atPath: blobs.path).first)
            let url = blobs.appendingPathComponent(blob)
            let original = try Data(contentsOf: url)
            var bytes = original
            bytes[1000] ^= 0x01
            try bytes.write(to: url)
            let out = files.directory.appendingPathComponent("out")
            await #expect {
                try await bob.messenger.saveAttachment(of: message.id, index: 0, to: out)
            } throws: { error in
                guard case ConfidantKitError.attachmentDamaged(_, reason: let why) = error else { return false }
                return why.contains("digest")
            }
            // Cut short on the server: the download breaks off, or arrives short.
            try bytes.prefix(bytes.count - 100).write(to: url)
            await #expect {
                try await bob.messenger.saveAttachment(of: message.id, index: 0, to: out)
            } throws: { error in
                switch error {
                case ConfidantKitError.attachmentDamaged, ConfidantKitError.attachmentUnavailable: true
                default: false
                }
            }
            #expect((try? FileManager.default.contentsOfDirectory(atPath: out.path))?.isEmpty ?? true)
            let name = AttachmentFile(
                attachment: message.attachments[0].id, peer: await alice.messenger.me, direction: .incoming
            ).fileName
            let kept = bob.profile.directory.appendingPathComponent("attachments/\(name)")
            #expect(!FileManager.default.fileExists(atPath: kept.path))
            // Whole again, it is saved and kept where the checks above looked.
            try original.write(to: url)
            _ = try await bob.messenger.saveAttachment(of: message.id, index: 0, to: out)
            #expect(FileManager.default.fileExists(atPath: kept.path))
            // Kept encrypted copies are the profile owner's alone (SECURITY.md).
            let attributes = try FileManager.default.attributesOfItem(atPath: kept.path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            let folder = try FileManager.default.attributesOfItem(atPath: kept.deletingLastPathComponent().path)
            #expect((folder[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        }
    }

    @Test("receipts move a message sent → delivered → read; with read receipts off it stays delivered")
    func receipts() async throws {
        try await Self.withPair { relay, alice, bob, _ in
            let first = try await alice.messenger.send("are you there?", to: bob.contact)
            #expect(first.status == .sent)
            _ = try await bob.messenger.sync()  // stores it and sends the delivery receipt
            _ = try await alice.messenger.sync()
            #expect(try await alice.messenger.history(with: bob.messenger.me).last?.status == .delivered)
            try await bob.messenger.markRead(alice.messenger.me)
            _ = try await bob.messenger.flushOutbox()
            _ = try await alice.messenger.sync()
            #expect(try await alice.messenger.history(with: bob.messenger.me).last?.status == .read)

            try await bob.messenger.setReadReceipts(false)
            let second = try await alice.messenger.send("and now?", to: bob.contact)
            _ = try await bob.messenger.sync()
            try await bob.messenger.markRead(alice.messenger.me)
            _ = try await bob.messenger.flushOutbox()
            _ = try await alice.messenger.sync()
            let statuses = try await alice.messenger.history(with: bob.messenger.me).map(\.status)
            #expect(statuses == [.read, .delivered], "\(statuses)")
            #expect(second.status == .sent)
            // Receipts are not messages: neither side's conversation has more lines.
            #expect(try await bob.messenger.history(with: alice.messenger.me).count == 2)
        }
    }

    @Test(
        "the author's edit and deletion apply on the peer; an edit or deletion the peer forges of the author's message does not"
    )
    func editsAndDeletions() async throws {
        try await Self.withPair { relay, alice, bob, files in
            let original = try await alice.messenger.send("meet at 5", to: bob.contact)
            let withFile = try await alice.messenger.send(
                "the map", attachments: [AttachmentSource(url: try files.write("map.png", Self.bytes(5000, seed: 1)))],
                to: bob.contact)
            _ = try await bob.messenger.sync()
            try await alice.messenger.edit(original.id, text: "meet at 6")
            _ = try await bob.messenger.sync()
            let edited = try #require(try await bob.messenger.history(with: alice.messenger.me).first)
            #expect(edited.text == "meet at 6" && edited.editedAt != nil)

            // Bob cannot edit Alice's message through the library …
            await #expect(throws: ConfidantKitError.notYourMessage(original.id)) {
                try await bob.messenger.edit(original.id, text: "meet never")
            }
            // … and an edit or a deletion he seals himself naming it changes nothing at Alice's.
            let aliceID = await alice.messenger.me
            try bob.messenger.store.write { db in
                for forged in [
                    ChatPayload.Content.edit(messageID: original.id, text: "forged"), .deletion(messageID: original.id),
                ] {
                    try bob.messenger.store.queueControl(
                        ChatPayload(conversation: aliceID, content: forged), to: aliceID,
                        now: Date(), db)
                }
            }
            _ = try await bob.messenger.flushOutbox()
            let waiting = try bob.messenger.store.read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM control_outbox")
            }
            #expect(waiting == 0, "both forged controls went")
            // A message after them: once Alice has it, she has handled the two before it.
            let after = try await bob.messenger.send("after the forgeries", to: alice.contact)
            #expect(try await alice.messenger.sync().map(\.id) == [after.id])
            let mine = try #require(
                try await alice.messenger.history(with: bob.messenger.me).first { $0.id == original.id })
            #expect(mine.text == "meet at 6" && !mine.isDeleted)

            try await alice.messenger.deleteForEveryone(withFile.id)
            _ = try await bob.messenger.sync()
            let deleted = try #require(
                try await bob.messenger.history(with: alice.messenger.me).first { $0.id == withFile.id })
            #expect(deleted.isDeleted && deleted.text == nil && deleted.attachments.isEmpty)
            #expect(deleted.displayText == "This message was deleted")
            await #expect(throws: ConfidantKitError.messageNotFound(withFile.id)) {
                try await bob.messenger.saveAttachment(of: withFile.id, index: 0, to: files.directory)
            }
            #expect(
                try await alice.messenger.history(with: bob.messenger.me).first { $0.id == withFile.id }?.isDeleted
                    == true)
        }
    }

    @Test("a disappearing message is gone from both stores, rows and files, once its time is up")
    func disappearing() async throws {
        try await Self.withPair { relay, alice, bob, files in
            let clock = ManualClock()
            let aliceNow = await alice.reopened(now: clock.now)
            let bobNow = await bob.reopened(now: clock.now)
            _ = try await aliceNow.send("this one stays", to: bob.contact)
            try await aliceNow.setDisappearingTimer(60, with: bob.contact)
            let fleeting = try await aliceNow.send(
                "gone in a minute", attachments: [AttachmentSource(url: try files.write("f.txt", Data("x".utf8)))],
                to: bob.contact)
            _ = try await bobNow.sync()
            #expect(try await bobNow.disappearingTimer(with: alice.messenger.me) == 60)
            let lines = try await bobNow.history(with: alice.messenger.me).map(\.displayText)
            #expect(lines == ["this one stays", "Alice set disappearing messages to 1 min", "gone in a minute"])
            // The timer's line is a notice of its own kind: no key-change warning on either side.
            let notice = try #require(
                try await bobNow.history(with: alice.messenger.me).first { $0.direction == .notice })
            #expect(notice.noticeKind == .timer && !notice.warnsOfKeyChange)
            #expect(try await bobNow.conversations().first?.keyChangeWarning == nil)
            #expect(try await aliceNow.conversations().first?.keyChangeWarning == nil)
            _ = try await bobNow.saveAttachment(
                of: fleeting.id, index: 0, to: files.directory.appendingPathComponent("b"))

            clock.advance(by: 59)
            #expect(try await bobNow.removeExpiredMessages() == 0)
            clock.advance(by: 2)
            #expect(try await aliceNow.removeExpiredMessages() == 1)
            #expect(try await bobNow.removeExpiredMessages() == 1)
            let ids = (alice: await alice.messenger.me, bob: await bob.messenger.me)
            for user in [alice, bob] {
                let texts = try await user.messenger.history(with: user.email == alice.email ? ids.bob : ids.alice)
                    .compactMap(\.text)
                #expect(!texts.contains("gone in a minute"))
                #expect(texts.contains("this one stays"))
                let rows = try user.messenger.store.read { db in
                    try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM attachment") ?? -1
                }
                #expect(rows == 0)
                let folder = user.profile.directory.appendingPathComponent("attachments")
                #expect((try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.isEmpty ?? true)
                // Deleted rows are overwritten on disk, not left in free pages (SECURITY.md).
                let secureDelete = try user.messenger.store.read { db in
                    try Int.fetchOne(db, sql: "PRAGMA secure_delete")
                }
                #expect(secureDelete == 1)
            }
            let contact = await bob.contact
            await #expect(throws: ConfidantKitError.invalidTimer(1)) {
                try await aliceNow.setDisappearingTimer(1, with: contact)
            }
        }
    }

    @Test("a timer set on the profile by another process applies to the next message sent, kept contexts or not")
    func timerFromAnotherProcess() async throws {
        try await Self.withPair { _, alice, bob, _ in
            let contact = await bob.contact
            // The first send stores the contact and the keys it fetched; the second reads its
            // context once more and keeps it.
            for text in ["before the timer", "still before it"] {
                #expect(try await alice.messenger.send(text, to: contact).expiresAt == nil)
            }
            let peer = await bob.messenger.me
            #expect(alice.messenger.store.sendingContexts.cached(peer)?.timer == .some(nil), "kept")
            // Another process on Alice's profile (`confidant chat` beside the app) sets the timer.
            let otherProcess = try LocalStore.open(
                at: alice.profile.storage.storeURL, identity: alice.messenger.identity)
            try otherProcess.write { db in try otherProcess.setTimer(60, for: peer, db) }
            let timed = try await alice.messenger.send("after the timer", to: contact)
            #expect(timed.expiresAt == timed.sentAt.addingTimeInterval(60))
            _ = try await bob.messenger.sync()
            let received = try await bob.messenger.history(with: alice.messenger.me).first { $0.id == timed.id }
            #expect(received?.expiresAt != nil, "the peer's copy disappears too")
        }
    }

    @Test(
        "a key refresh that finds nothing new writes nothing: no sync, and the sends' kept context stays; a renamed peer is written"
    )
    func unchangedRefreshWritesNothing() async throws {
        try await Self.withPair { _, alice, bob, _ in
            let contact = await bob.contact
            for text in ["one", "two"] { _ = try await alice.messenger.send(text, to: contact) }
            let peer = await bob.messenger.me
            let store = alice.messenger.store
            #expect(store.sendingContexts.cached(peer) != nil, "kept")
            let log = try #require(store.log)
            try await waitUntil { store.commitCounts.synced == store.commitCounts.count }
            let syncs = log.syncs.load(ordering: .relaxed)
            #expect(try await alice.messenger.directory.refreshKeys(of: peer).count == 1)
            #expect(store.sendingContexts.cached(peer) != nil, "still kept")
            #expect(log.syncs.load(ordering: .relaxed) == syncs, "nothing written, so nothing synced")

            try await bob.messenger.updateProfile(displayName: "Robert")
            try await alice.messenger.directory.refreshKeys(of: peer)
            #expect(try store.contact(id: peer)?.displayName == "Robert")
            #expect(store.sendingContexts.cached(peer) == nil, "the contact changed: read afresh")
        }
    }

    @Test("a profile picture is fetched once per digest and what the peer sees is what was set")
    func avatars() async throws {
        try await Self.withPair { relay, alice, bob, _ in
            let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Self.bytes(300, seed: 5)
            try await alice.messenger.setAvatar(try Avatar(png))
            let listed = try #require(try await bob.messenger.users().first { $0.email == alice.email })
            #expect(listed.avatarDigest == SHA256Hex.of(png))
            let contact = try await bob.messenger.contact(email: alice.email)
            _ = try await bob.messenger.send("hi", to: contact)  // stores the contact with its digest
            #expect(try await bob.messenger.avatar(of: contact.id)?.data == png)
            let cached = bob.profile.directory.appendingPathComponent("avatars/\(SHA256Hex.of(png))")
            #expect(FileManager.default.fileExists(atPath: cached.path))
            // A new picture: until Bob's device learns its digest it shows the cached one (no fetch),
            // then the new one. Sends reuse the keys they fetched for a minute
            // (`KeyDirectory.keysFreshFor`), so the next fetch is what tells: here the safety numbers'.
            let newer = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Self.bytes(400, seed: 6)
            try await alice.messenger.setAvatar(try Avatar(newer))
            #expect(try await bob.messenger.avatar(of: contact.id)?.data == png)
            _ = try await bob.messenger.send("new picture?", to: contact)
            #expect(try await bob.messenger.avatar(of: contact.id)?.data == png, "the send fetched nothing")
            _ = try await bob.messenger.verification(of: contact)  // refreshes the contact
            #expect(try await bob.messenger.avatar(of: contact.id)?.data == newer)
        }
    }

    static func files(in directory: URL) throws -> [URL] {
        var found: [URL] = []
        let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = enumerator?.nextObject() as? URL {
            if (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true { found.append(url) }
        }
        return found
    }
}

enum SHA256Hex {
    static func of(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }
}
