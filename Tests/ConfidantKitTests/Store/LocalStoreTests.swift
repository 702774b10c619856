import ConfidantCrypto
import Foundation
import GRDB
import GRDBSQLite
import Testing

@testable import ConfidantKit

@Suite("Chat payload and local store")
struct LocalStoreTests {
    /// A store in a profile directory of its own, removed afterwards.
    private func withStore(_ body: (LocalStore, TestProfile) throws -> Void) throws {
        let profile = TestProfile()
        defer { profile.remove() }
        try body(try profile.openStore(), profile)
    }

    /// Two stores on one file, each with its own connection and caches, as two processes have it.
    private func withTwoStores(_ body: (LocalStore, LocalStore, PrivateIdentity) throws -> Void) throws {
        let profile = TestProfile()
        defer { profile.remove() }
        try profile.storage.prepare()
        let identity = try PrivateIdentity.generate()
        let store = try LocalStore.open(at: profile.storage.storeURL, identity: identity)
        try body(store, try LocalStore.open(at: profile.storage.storeURL, identity: identity), identity)
    }

    @Test(
        "a store from before scoped attachment names gets them once: each row's file under its own name, the old name gone"
    )
    func attachmentFilesRenamed() throws {
        try withStore { store, _ in
            let (peer, other, attachment) = (UUID(), UUID(), UUID())
            let pointer = AttachmentPointer(
                id: attachment, blobID: UUID(), capability: nil, key: Data(repeating: 7, count: 32),
                digest: String(repeating: "ab", count: 32), size: 5, contentType: "text/plain", name: "a.txt",
                thumbnail: nil)
            // Two conversations' rows with one attachment id: before, they shared one file.
            for (from, direction) in [(peer, ChatMessage.Direction.outgoing), (other, .incoming)] {
                _ = try store.insert([
                    LocalStore.NewMessage(
                        id: UUID(), peer: from, direction: direction, senderDevice: nil, sentAt: Date(), text: nil,
                        unreadableReason: nil, state: direction == .incoming ? .received : .sent,
                        attachments: [pointer])
                ])
            }
            try store.prepareAttachmentsDirectory()
            let legacy = store.attachmentsDirectory.appendingPathComponent(attachment.canonicalString)
            try Data("ciphertext".utf8).write(to: legacy)
            try store.write { db in try db.execute(sql: "DELETE FROM meta WHERE key = 'attachment_files'") }
            try store.nameAttachmentFilesByScope()
            #expect(!FileManager.default.fileExists(atPath: legacy.path))
            for file in [
                AttachmentFile(attachment: attachment, peer: peer, direction: .outgoing),
                AttachmentFile(attachment: attachment, peer: other, direction: .incoming),
            ] {
                #expect(try Data(contentsOf: store.attachmentFile(file)) == Data("ciphertext".utf8))
            }
            #expect(
                store.attachmentFile(AttachmentFile(attachment: attachment, peer: peer, direction: .outgoing))
                    != store.attachmentFile(AttachmentFile(attachment: attachment, peer: other, direction: .incoming)))
            // Once: a second call finds the mark and moves nothing.
            try Data("new".utf8).write(to: legacy)
            try store.nameAttachmentFilesByScope()
            #expect(FileManager.default.fileExists(atPath: legacy.path))
        }
    }

    @Test("the chat payload has the documented bytes and round-trips")
    func payloadKnownAnswer() throws {
        let conversation = try #require(UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF"))
        let payload = ChatPayload(conversation: conversation, text: "hé")
        #expect(
            try payload.serialized
                == Data([
                    0x01, 0x01, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB,
                    0xCC, 0xDD, 0xEE, 0xFF, 0x68, 0xC3, 0xA9,
                ]))
        #expect(try ChatPayload(serialized: payload.serialized) == payload)
    }

    @Test("kinds 2 to 6 are JSON after the header, round-trip, and are bounded")
    func payloadKinds() throws {
        let conversation = try #require(UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF"))
        let target = try #require(UUID(uuidString: "0F0E0D0C-0B0A-0908-0706-050403020100"))
        let header =
            Data([0x01])
            + Data([0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF])
        func json(_ kind: UInt8, _ text: String) -> Data { Data([0x01, kind]) + header.dropFirst() + Data(text.utf8) }
        let cases: [(ChatPayload.Content, Data)] = [
            (
                .receipt(Receipt(.read, messageIDs: [target])),
                json(3, #"{"messageIds":["0F0E0D0C-0B0A-0908-0706-050403020100"],"type":"read"}"#)
            ),
            (
                .edit(messageID: target, text: "new"),
                json(4, #"{"messageId":"0F0E0D0C-0B0A-0908-0706-050403020100","text":"new"}"#)
            ),
            (.deletion(messageID: target), json(5, #"{"messageId":"0F0E0D0C-0B0A-0908-0706-050403020100"}"#)),
            (.timer(expiresAfter: 3600), json(6, #"{"expiresAfter":3600}"#)),
            (.message(RichMessage(text: "hi", expiresAfter: 30)), json(2, #"{"expiresAfter":30,"text":"hi"}"#)),
        ]
        for (content, bytes) in cases {
            let payload = ChatPayload(conversation: conversation, content: content)
            #expect(try payload.serialized == bytes, "\(content)")
            #expect(try ChatPayload(serialized: bytes) == payload)
        }
        // Receipts are written by hand: the same bytes as the encoder's, for any count and kind.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for count in [1, 2, 3, 50, ChatPayload.maximumReceiptIDs] {
            for kind in [Receipt.Kind.delivered, .read] {
                let receipt = Receipt(kind, messageIDs: (0..<count).map { _ in UUID() })
                #expect(receipt.json == (try encoder.encode(receipt)), "\(count) \(kind)")
            }
        }
        // An attachment pointer round-trips, its key and thumbnail as base64.
        let pointer = AttachmentPointer(
            id: target, blobID: conversation, capability: "cap", key: Data(repeating: 7, count: 32),
            digest: String(repeating: "ab", count: 32), size: 5, contentType: "text/plain", name: "a.txt",
            thumbnail: Data([1, 2]))
        let rich = ChatPayload(
            conversation: conversation, content: .message(RichMessage(text: nil, attachments: [pointer])))
        #expect(try ChatPayload(serialized: rich.serialized) == rich)
        #expect(
            String(decoding: try rich.serialized.dropFirst(18), as: UTF8.self).contains(
                #""key":"BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=""#))

        // Bad bodies are refused with the reason.
        func refused(_ kind: UInt8, _ text: String) -> Bool {
            (try? ChatPayload(serialized: json(kind, text))) == nil
        }
        #expect(refused(2, "{}"), "neither text nor files")
        #expect(refused(2, #"{"text":"x","expiresAfter":1}"#), "a timer under 5 s")
        #expect(refused(3, #"{"type":"read","messageIds":[]}"#), "a receipt for nothing")
        #expect(refused(3, #"{"type":"seen","messageIds":["0F0E0D0C-0B0A-0908-0706-050403020100"]}"#))
        #expect(refused(4, #"{"messageId":"not a uuid","text":"x"}"#))
        #expect(refused(6, #"{"expiresAfter":-5}"#))
        #expect(refused(6, "[1,2"))
        var badKey = try JSONSerialization.jsonObject(with: JSONEncoder().encode(pointer)) as? [String: Any] ?? [:]
        badKey["key"] = Data(repeating: 1, count: 16).base64EncodedString()
        let badPointer = String(
            decoding: try JSONSerialization.data(withJSONObject: ["attachments": [badKey]]), as: UTF8.self)
        #expect(refused(2, badPointer), "a 16-byte key")
        let many = String(
            decoding: try JSONEncoder().encode(
                RichMessage(text: nil, attachments: Array(repeating: pointer, count: 33))), as: UTF8.self)
        #expect(refused(2, many), "33 attachments")
    }

    @Test("malformed payloads are refused with the reason")
    func payloadMalformed() throws {
        let good = try ChatPayload(conversation: UUID(), text: "x").serialized
        #expect(throws: ChatPayloadError.truncated) { try ChatPayload(serialized: good.prefix(17)) }
        #expect(throws: ChatPayloadError.unsupportedVersion(2)) {
            try ChatPayload(serialized: Data([2]) + good.dropFirst())
        }
        #expect(throws: ChatPayloadError.unsupportedKind(255)) {
            try ChatPayload(serialized: Data([1, 255]) + good.dropFirst(2))
        }
        #expect(throws: ChatPayloadError.invalidText) { try ChatPayload(serialized: good.prefix(18) + Data([0xC3])) }
    }

    @Test("a kind 7 payload carries a list of group changes; an empty, cut or overlong list is refused")
    func groupChangeLists() throws {
        let group = UUID()
        let changes = [Data([1, 2, 3]), Data(repeating: 7, count: ChatPayload.maximumGroupChangeBytes)]
        let payload = ChatPayload(conversation: group, content: .groupChanges(changes))
        let bytes = try payload.serialized
        #expect(bytes.prefix(2) == Data([1, 7]) && bytes[18..<22] == Data([0, 2, 0, 3]))
        #expect(try ChatPayload(serialized: bytes) == payload)
        let header = bytes.prefix(18)
        func refused(_ body: [UInt8]) -> Bool { (try? ChatPayload(serialized: header + Data(body))) == nil }
        #expect(refused([]), "no count")
        #expect(refused([0, 0]), "no changes")
        #expect(refused([0, 1, 0, 0]), "an empty change")
        #expect(refused([0, 1, 0, 4, 1, 2, 3]), "a change cut short")
        #expect(refused([0, 1, 0, 1, 9, 9]), "a byte after the last change")
        #expect(refused([0, 2, 0, 1, 9]), "fewer changes than counted")
        #expect(refused([0, 1, 0x3F, 0xB4] + Array(repeating: 0, count: 16_308)), "a change over 16,307 bytes")
        #expect(throws: ChatPayloadError.self) {
            try ChatPayload(conversation: group, content: .groupChanges([])).serialized
        }
        // Kind 8, a message to the group: its id and a text of 1…61,440 bytes.
        let said = ChatPayload(conversation: group, content: .groupMessage(messageID: UUID(), text: "hé"))
        #expect(try ChatPayload(serialized: try said.serialized) == said)
        let kind8 = Data([1, 8]) + bytes[2..<18]
        for body in [
            #"{"messageId":"0192d7e0-0000-7000-8000-00000000000a","text":""}"#, #"{"text":"no id"}"#, "not json",
            #"{"messageId":"0192d7e0-0000-7000-8000-00000000000a","text":""#
                + String(repeating: "x", count: ChatPayload.maximumTextBytes + 1) + #""}"#,
        ] {
            #expect((try? ChatPayload(serialized: kind8 + Data(body.utf8))) == nil, "\(body.prefix(60))")
        }
        // A history too long for one envelope goes in several payloads, in order.
        let history = Array(repeating: Data(repeating: 1, count: 10_000), count: 13)
        let batches = ChatPayload.groupChangeBatches(history)
        #expect(batches.count == 3 && batches.flatMap { $0 } == history)
        for batch in batches {
            #expect(
                try ChatPayload(conversation: group, content: .groupChanges(batch)).serialized.count
                    <= ChatPayload.maximumBytes)
        }
    }

    @Test("the store seals texts and names: the file holds none of them, and another device key cannot open it")
    func sealedAtRest() throws {
        let profile = TestProfile()
        defer { profile.remove() }
        try profile.storage.prepare()
        let identity = try PrivateIdentity.generate()
        let store = try LocalStore.open(at: profile.storage.storeURL, identity: identity)
        let peer = Contact(id: UUID(), email: "walrus-peer@example.com", displayName: "Quintessa Walrus")
        try store.saveContact(peer)
        try store.insert([
            .init(
                id: UUID(), peer: peer.id, direction: .incoming, senderDevice: UUID(), sentAt: Date(),
                text: "the eagle lands at midnight", unreadableReason: nil, state: .received)
        ])
        #expect(try store.history(with: peer.id, limit: 10).first?.text == "the eagle lands at midnight")
        #expect(try store.contact(email: "WALRUS-PEER@example.com") == peer)
        // The database and its write-ahead log, where fresh rows live until a checkpoint.
        var bytes = Data()
        for name in try FileManager.default.contentsOfDirectory(atPath: profile.directory.path) {
            bytes += try Data(contentsOf: profile.directory.appendingPathComponent(name))
        }
        #expect(bytes.count > 4096)
        for secret in ["the eagle lands", "Quintessa", "walrus-peer"] {
            #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(secret) is in the file")
        }
        #expect(throws: ConfidantKitError.self) {
            try LocalStore.open(at: profile.storage.storeURL, identity: PrivateIdentity.generate())
        }
    }

    @Test("prekeys kept parsed follow the stored row: a write that rolled back is not read back")
    func parsedPrekeysFollowTheRow() throws {
        try withStore { store, _ in
            var prekeys = try DevicePrekeys.generate()
            _ = prekeys.addOneTimePrekeys(3)
            try store.transaction { try $0.storeDevicePrekeys(prekeys) }
            #expect(try store.transaction { try $0.devicePrekeys()?.serialized } == prekeys.serialized)

            struct Refused: Error {}
            var more = prekeys
            _ = more.addOneTimePrekeys(2)
            #expect(throws: Refused.self) {
                try store.transaction { transaction in
                    try transaction.storeDevicePrekeys(more)
                    try transaction.flush()
                    throw Refused()
                }
            }
            #expect(more.oneTimeCount == prekeys.oneTimeCount + 2)
            #expect(try store.transaction { try $0.devicePrekeys()?.oneTimeCount } == prekeys.oneTimeCount)
            try store.transaction { try $0.storeDevicePrekeys(more) }
            #expect(try store.transaction { try $0.devicePrekeys()?.oneTimeCount } == more.oneTimeCount)
        }
    }

    @Test("sessions read in a transaction follow its writes: replaced, ended, and rolled back")
    func sessionsFollowTheTransaction() throws {
        try withStore { store, _ in
            let device = DeviceAddress(userID: UUID(), deviceID: UUID())
            try store.transaction { transaction in
                #expect(try transaction.session(with: device, fingerprint: "one") == nil)
                try transaction.storeSession(SessionRecord(), with: device, fingerprint: "one")
                #expect(try transaction.session(with: device, fingerprint: "one") != nil)
                // One session per device: a session with another key replaces it.
                try transaction.storeSession(SessionRecord(), with: device, fingerprint: "two")
                #expect(try transaction.session(with: device, fingerprint: "one") == nil)
                #expect(try transaction.session(with: device, fingerprint: "two") != nil)
            }
            #expect(try store.session(with: device, fingerprint: "one") == nil)
            #expect(try store.session(with: device, fingerprint: "two") != nil)

            struct Refused: Error {}
            #expect(throws: Refused.self) {
                try store.transaction { transaction in
                    #expect(try transaction.session(with: device, fingerprint: "two") != nil)
                    try transaction.endSessions(of: device.userID, devices: [device.deviceID])
                    #expect(try transaction.session(with: device, fingerprint: "two") == nil)
                    throw Refused()
                }
            }
            #expect(try store.session(with: device, fingerprint: "two") != nil)
            try store.transaction { transaction in
                _ = try transaction.session(with: device, fingerprint: "two")
                try transaction.endAllSessions()
                #expect(try transaction.session(with: device, fingerprint: "two") == nil)
            }
            #expect(try store.session(with: device, fingerprint: "two") == nil)
        }
    }

    @Test("a session stored several times in one transaction is written once, at its end, as last stored")
    func sessionWrittenOnce() throws {
        try withStore { store, _ in
            let device = DeviceAddress(userID: UUID(), deviceID: UUID())
            let other = DeviceAddress(userID: device.userID, deviceID: UUID())
            func changes() -> Int { store.database.writeWithoutTransaction { $0.totalChangesCount } }
            let before = changes()
            try store.transaction { transaction in
                for _ in 0..<5 { try transaction.storeSession(SessionRecord(), with: device, fingerprint: "one") }
                try transaction.storeSession(SessionRecord(), with: other, fingerprint: "x")
                // Rebound to another key before the end: only that one is written.
                try transaction.storeSession(SessionRecord(), with: device, fingerprint: "two")
                // Not written yet: the row appears at the end.
                #expect(try Int.fetchOne(transaction.db, sql: "SELECT COUNT(*) FROM session") == 0)
            }
            #expect(changes() - before == 2, "one row per device")
            #expect(try store.session(with: device, fingerprint: "one") == nil)
            #expect(try store.session(with: device, fingerprint: "two") != nil)
            #expect(try store.session(with: other, fingerprint: "x") != nil)
            // Stored, then ended in the same transaction: nothing written.
            let third = DeviceAddress(userID: UUID(), deviceID: UUID())
            try store.transaction { transaction in
                try transaction.storeSession(SessionRecord(), with: third, fingerprint: "t")
                try transaction.endSessions(of: third.userID, devices: [third.deviceID])
            }
            #expect(try store.session(with: third, fingerprint: "t") == nil)
        }
    }

    @Test(
        "sessions kept opened follow the stored row: a write that rolled back, and another process's write, are read as stored"
    )
    func openedSessionsFollowTheRow() throws {
        try withTwoStores { store, otherProcess, identity in
            let peer = try PrivateIdentity.generate()
            var prekeys = try DevicePrekeys.generate()
            _ = prekeys.addOneTimePrekeys(1)
            let upload = try prekeys.upload(signedBy: peer, oneTimePrekeys: prekeys.allOneTimePrekeys)
            var first = SessionRecord()
            try first.start(
                from: identity, to: peer.publicIdentity,
                bundle: PrekeyBundle(
                    deviceID: peer.deviceID, signedPrekey: upload.signedPrekey, kemPrekey: upload.kemPrekey,
                    oneTimePrekey: upload.oneTimePrekeys.first))
            var second = first
            _ = try second.seal(
                Data("moves the chain on".utf8), from: identity, senderUserID: UUID(), to: peer.publicIdentity,
                recipientUserID: UUID())
            var third = second
            _ = try third.seal(
                Data("and again".utf8), from: identity, senderUserID: UUID(), to: peer.publicIdentity,
                recipientUserID: UUID())
            #expect(Set([first.serialized, second.serialized, third.serialized]).count == 3)
            let device = DeviceAddress(userID: UUID(), deviceID: peer.deviceID)

            try store.transaction { try $0.storeSession(first, with: device, fingerprint: "f") }
            #expect(try store.session(with: device, fingerprint: "f")?.serialized == first.serialized)
            struct Refused: Error {}
            #expect(throws: Refused.self) {
                try store.transaction { transaction in
                    try transaction.storeSession(second, with: device, fingerprint: "f")
                    throw Refused()
                }
            }
            #expect(try store.session(with: device, fingerprint: "f")?.serialized == first.serialized, "rolled back")
            try otherProcess.transaction { try $0.storeSession(third, with: device, fingerprint: "f") }
            #expect(
                try store.session(with: device, fingerprint: "f")?.serialized == third.serialized, "written elsewhere")
            #expect(try store.session(with: device, fingerprint: "g") == nil, "bound to another key")
        }
    }

    @Test("contacts kept opened follow the stored row: a rename here, one in another process, and one rolled back")
    func openedContactsFollowTheRow() throws {
        try withTwoStores { store, otherProcess, _ in
            let id = UUID()
            let named = { (name: String) in Contact(id: id, email: "carol@example.com", displayName: name) }

            try store.saveContact(named("Carol"))
            #expect(try store.contact(id: id)?.displayName == "Carol")
            #expect(try store.contact(id: id)?.displayName == "Carol", "read again, from what was opened")
            try store.saveContact(named("Carol B."))
            #expect(try store.contact(id: id)?.displayName == "Carol B.")
            try otherProcess.saveContact(named("Carol C."))
            #expect(try store.contact(id: id)?.displayName == "Carol C.", "written elsewhere")
            struct Refused: Error {}
            let record = try store.contactRecord(named("Carol D."))
            #expect(throws: Refused.self) {
                try store.write { db in
                    try LocalStore.save(record, db)
                    #expect(try store.contacts([id], db)[id]?.displayName == "Carol D.", "inside the transaction")
                    throw Refused()
                }
            }
            #expect(try store.contact(id: id)?.displayName == "Carol C.", "rolled back")
        }
    }

    @Test(
        "a send's context is kept until a contact or timer changes here or anything commits elsewhere; a message built on a stale one is refused and nothing written"
    )
    func sendingContextsFollowTheStore() throws {
        try withTwoStores { store, otherProcess, _ in
            let peer = UUID()
            try store.saveContact(Contact(id: peer, email: "dave@example.com", displayName: "Dave"))
            func message(_ text: String) -> LocalStore.NewMessage {
                LocalStore.NewMessage(
                    id: UUID(), peer: peer, direction: .outgoing, senderDevice: nil, sentAt: Date(), text: text,
                    unreadableReason: nil, state: .pending)
            }
            func stored(_ text: String) throws -> Bool {
                try store.history(with: peer, limit: 50).contains { $0.text == text }
            }

            let first = try store.sendingContext(for: peer)
            #expect(first.contact?.displayName == "Dave" && first.timer == nil)
            #expect(store.sendingContexts.cached(peer) == first, "kept")
            #expect(try store.sendingContext(for: peer) == first, "read again from what was kept")
            // A write here that touches neither contacts nor timers leaves it current.
            _ = try store.queue(message("unrelated"), confirmed: false, now: Date())
            _ = try store.queue(message("on the kept context"), confirmed: false, builtOn: first, now: Date())
            #expect(try stored("on the kept context"))

            // A timer set on this connection: forgotten at once, and refused in the queueing.
            try store.write { db in try store.setTimer(60, for: peer, db) }
            #expect(store.sendingContexts.cached(peer) == nil)
            #expect(throws: SendingContexts.Stale.self) {
                try store.queue(message("stale here"), confirmed: false, builtOn: first, now: Date())
            }
            #expect(try !stored("stale here"), "nothing written")
            let second = try store.sendingContext(for: peer)
            #expect(second.timer == 60)

            // Another process commits (a rename): the data version moved. (The outbox emptied
            // first: `queueSealed` seals only a message that waits behind nothing.)
            try store.write { db in try db.execute(sql: "DELETE FROM outbox") }
            try otherProcess.saveContact(Contact(id: peer, email: "dave@example.com", displayName: "David"))
            #expect(throws: SendingContexts.Stale.self) {
                try store.queueSealed(message("stale elsewhere"), confirmed: false, builtOn: second, now: Date()) {
                    _ in [Data()]
                }
            }
            #expect(try !stored("stale elsewhere"), "nothing written")
            let third = try store.sendingContext(for: peer, fresh: true)
            #expect(third.contact?.displayName == "David" && third.timer == 60)
            _ = try store.queue(message("on a fresh context"), confirmed: false, builtOn: third, now: Date())
            #expect(try stored("on a fresh context"))

            // A change that rolls back forgets what was kept too (read again, not refused wrongly).
            struct Refused: Error {}
            #expect(throws: Refused.self) {
                try store.write { db in
                    try store.setTimer(5, for: peer, db)
                    throw Refused()
                }
            }
            #expect(try store.sendingContext(for: peer).timer == 60)
        }
    }

    @Test("reads keep the connection's prepared statements: none is compiled again")
    func readsKeepPreparedStatements() throws {
        try withStore { store, _ in
            let sql = "SELECT COUNT(*) FROM outbox"
            // A read between two uses of a cached statement, as the message path does all the time.
            // SQLite counts how often a statement was compiled again after being expired (for
            // instance by a flag pragma such as `query_only`).
            for _ in 0..<3 {
                #expect(try store.read { db in try Int.fetchOne(db.cachedStatement(sql: sql)) } == 0)
                try store.write { db in try db.execute(sql: "DELETE FROM outbox WHERE message_id = ?", arguments: ["x"])
                }
            }
            let recompiled = try store.read { db in
                sqlite3_stmt_status(try db.cachedStatement(sql: sql).sqliteStatement, SQLITE_STMTSTATUS_REPREPARE, 0)
            }
            #expect(recompiled == 0)
        }
    }

    @Test("a synced write syncs the log once it has committed; a deferred one leaves that to the next synced write")
    func syncedWritesSyncTheLog() throws {
        try withStore { store, _ in
            // SQLite's levels: 1 NORMAL (in WAL mode, no sync at commit), 2 FULL (the log synced at
            // every commit). The connection stays at NORMAL; the store syncs the log itself.
            func level(_ db: Database) throws -> Int? { try Int.fetchOne(db, sql: "PRAGMA synchronous") }
            let log = try #require(store.log, "the store is in WAL mode")
            func syncs() -> Int { log.syncs.load(ordering: .relaxed) }
            #expect(syncs() == 1, "what opening wrote (the schema, the data key) is synced before the store is used")
            func insert(_ key: String) -> (Database) throws -> Void {
                { db in try db.execute(sql: "INSERT INTO meta (key, value) VALUES (?, x'00')", arguments: [key]) }
            }
            #expect(try store.write { db in try level(db) } == 1)
            #expect(try store.transaction { transaction in try level(transaction.db) } == 1)
            #expect(try store.write(.deferred) { db in try level(db) } == 1)

            var before = syncs()
            let deferred = try store.countedWrite(.deferred, insert("deferred")).commit
            #expect(syncs() == before, "a deferred write does not sync")
            #expect(store.commitCounts.synced < deferred)
            try store.write { db in try db.execute(sql: "DELETE FROM meta WHERE key = 'none'") }
            #expect(syncs() == before, "a synced write that changed nothing has nothing to sync")
            #expect(store.commitCounts.synced < deferred)
            let synced = try store.countedWrite(.synced, insert("synced")).commit
            #expect(syncs() == before + 1, "one sync, after the commit")
            #expect(store.commitCounts.synced == synced, "and the deferred commit before it with it")
            before = syncs()
            _ = try store.countedTransaction(.synced) { transaction in try insert("transaction")(transaction.db) }
            #expect(syncs() == before + 1)
            try store.rewrap(for: PrivateIdentity.generate())
            #expect(syncs() == before + 2, "a rewrapped data key is synced")
            #expect(store.commitCounts.synced == store.commitCounts.count)
            struct Refused: Error {}
            #expect(throws: Refused.self) {
                try store.write(.deferred) { db in
                    try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('test', x'00')")
                    throw Refused()
                }
            }
            // The failed write rolled back, and the connection is usable.
            #expect(
                try store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM meta WHERE key = 'test'") } == 0)
            try store.write(.deferred) { db in
                try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('test', x'00')")
            }
            #expect(
                try store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM meta WHERE key = 'test'") } == 1)
        }
    }

    @Test("a deferred commit is synced by the next synced commit that wrote, or by sync(through:)")
    func syncThroughADeferredCommit() throws {
        try withStore { store, _ in
            func syncWrites() throws -> Int? {
                try store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM meta WHERE key = 'synced_at'") }
            }
            func insert(_ key: String) -> (Database) throws -> Void {
                { db in try db.execute(sql: "INSERT INTO meta (key, value) VALUES (?, x'00')", arguments: [key]) }
            }
            // Followed by a synced commit that wrote: nothing more to do.
            let first = try store.countedWrite(.deferred, insert("a")).commit
            try store.write(.synced, insert("b"))
            try store.sync(through: first)
            #expect(try syncWrites() == 0)
            // Followed by a synced commit that changed nothing (so wrote nothing to the log): synced
            // by a write of its own.
            let second = try store.countedWrite(.deferred, insert("c")).commit
            try store.write { db in try db.execute(sql: "DELETE FROM meta WHERE key = 'none'") }
            try store.sync(through: second)
            #expect(try syncWrites() == 1)
            // Once is enough.
            try store.sync(through: second)
            try store.write { db in try db.execute(sql: "DELETE FROM meta WHERE key = 'synced_at'") }
            try store.sync(through: second)
            #expect(try syncWrites() == 0)
        }
    }

    @Test("the outbox is read from its own rows, not by walking every message")
    func outboxQueryPlan() throws {
        try withStore { store, _ in
            let plan = try store.read { db in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + LocalStore.outboxQuery, arguments: [1]).map {
                    $0["detail"] as String? ?? ""
                }
            }
            #expect(plan.first?.hasPrefix("SCAN o") == true, "\(plan)")
            #expect(plan.contains { $0.hasPrefix("SEARCH m USING INDEX") }, "\(plan)")
            #expect(!plan.contains { $0.hasPrefix("SCAN m") }, "\(plan)")
            // Whether a message has files: by the attachments' primary key, not a walk.
            #expect(plan.contains { $0.contains("SEARCH a USING") }, "\(plan)")
            #expect(!plan.contains { $0.contains("SCAN a") }, "\(plan)")
        }
    }

    @Test(
        "messages queued together take one commit, in order; one built on a stale context is left out, nothing written for it"
    )
    func queueSeveralInOneCommit() throws {
        try withStore { store, _ in
            let peer = UUID()
            try store.saveContact(Contact(id: peer, email: "erin@example.com", displayName: "Erin"))
            func new(_ text: String, on context: SendingContext?) -> LocalStore.NewQueued {
                .text(text, to: peer, on: context)
            }
            let stale = try store.sendingContext(for: peer)
            try store.write { db in try store.setTimer(60, for: peer, db) }
            let fresh = try store.sendingContext(for: peer)
            // The stale one last: its check forgets every context kept, so one queued after it
            // on a context read before would be refused too (and read afresh by its sender).
            let batch = [new("one", on: nil), new("two", on: fresh), new("stale", on: stale)]
            let before = store.commitCounts.count
            let (stored, commit) = try store.queue(batch)
            #expect(store.commitCounts.count == before + 1 && commit == before + 1, "one commit for all")
            #expect(stored.map { $0?.text } == ["one", "two", nil])
            #expect(stored.map { $0?.id } == [batch[0].message.id, batch[1].message.id, nil])
            #expect(try store.outbox().map(\.message.text) == ["one", "two"])
            #expect(try !store.history(with: peer, limit: 10).contains { $0.text == "stale" }, "nothing written for it")
        }
    }

    @Test(
        "the outbox read for a window leaves out what it holds and puts what was just queued in its place, decoding neither, in order"
    )
    func outboxForAWindow() throws {
        try withStore { store, _ in
            let peer = UUID()
            var queued: [LocalStore.QueuedMessage] = []
            for text in ["first", "second", "third", "fourth"] {
                let message = LocalStore.NewMessage(
                    id: UUID.timeOrdered(), peer: peer, direction: .outgoing, senderDevice: nil, sentAt: Date(),
                    text: text, unreadableReason: nil, state: .pending)
                let stored = try store.queue(message, confirmed: false, now: Date()).message
                queued.append(LocalStore.QueuedMessage(justQueued: stored, confirmed: false))
            }
            let ids = queued.map(\.message.id)
            // The held and the reused messages' sealed bodies damaged: a read that opened them fails.
            try store.write { db in
                for id in [ids[0], ids[2]] {
                    try db.execute(
                        sql: "UPDATE message SET body = x'00' WHERE message_id = ?", arguments: [id.canonicalString])
                }
            }
            #expect(throws: (any Error).self) { try store.outbox() }
            let read = try store.outbox(excluding: [ids[0]], reusing: [ids[2]: queued[2]])
            #expect(read.map(\.message.id) == [ids[1], ids[2], ids[3]])
            #expect(read.map(\.message.text) == ["second", "third", "fourth"])
        }
    }

    @Test("a store from before the outbox was keyed by message id keeps what waits in it, in order")
    func outboxMigration() throws {
        let profile = TestProfile()
        defer { profile.remove() }
        try profile.storage.prepare()
        let peer = UUID()
        let ids = [UUID.timeOrdered(), UUID.timeOrdered()]
        do {
            // The schema as version 5 left it, with two messages waiting, the first tried twice.
            let old = try DatabaseQueue(path: profile.storage.storeURL.path)
            try LocalStoreSchema.migrator.migrate(old, upTo: "v5-session-boot")
            try old.write { db in
                for (index, id) in ids.enumerated() {
                    try db.execute(
                        sql: """
                            INSERT INTO message (message_id, peer_id, direction, sent_at, unreadable_reason, state)
                            VALUES (?, ?, ?, ?, 'not kept', 'pending')
                            """,
                        arguments: [
                            id.canonicalString, peer.canonicalString, ChatMessage.Direction.outgoing,
                            1_800_000_000 + Double(index),
                        ])
                    try db.execute(
                        sql: """
                            INSERT INTO outbox
                                (message_id, peer_id, attempts, confirmed, created_at, next_attempt_at, last_error)
                            VALUES (?, ?, ?, ?, ?, ?, ?)
                            """,
                        arguments: [
                            id.canonicalString, peer.canonicalString, 2 - index, index == 0,
                            1_800_000_000 + Double(index), index == 0 ? 1_800_000_100 : nil,
                            index == 0 ? "offline" : nil,
                        ])
                }
            }
        }
        let store = try LocalStore.open(at: profile.storage.storeURL, identity: PrivateIdentity.generate())
        let waiting = try store.outbox()
        #expect(waiting.map(\.message.id) == ids)
        #expect(waiting.map(\.attempts) == [2, 1])
        #expect(waiting.map(\.confirmed) == [true, false])
        #expect(waiting.map(\.lastError) == ["offline", nil])
        #expect(waiting.first?.nextAttemptAt == Date(timeIntervalSince1970: 1_800_000_100))
        let table = try store.read { db in
            try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'outbox'")
        }
        #expect(table?.contains("WITHOUT ROWID") == true)
        // Sending takes a message out as before.
        try store.finish([ids[0]], failure: nil)
        #expect(try store.outbox().map(\.message.id) == [ids[1]])
    }

    @Test("observations refetch without expiring the connection's prepared statements")
    func observationsKeepPreparedStatements() async throws {
        let profile = TestProfile()
        defer { profile.remove() }
        let store = try profile.openStore()
        let sql = "SELECT COUNT(*) FROM outbox"
        var updates = store.observe { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM meta") ?? 0 }
            .makeAsyncIterator()
        let first = try #require(try await updates.next())
        for index in 1...3 {
            #expect(try store.read { db in try Int.fetchOne(db.cachedStatement(sql: sql)) } == 0)
            try store.write { db in
                try db.execute(sql: "INSERT INTO meta (key, value) VALUES (?, x'00')", arguments: ["test-\(index)"])
            }
            // The write made the observation fetch again.
            #expect(try await updates.next() == first + index)
        }
        let recompiled = try store.read { db in
            sqlite3_stmt_status(try db.cachedStatement(sql: sql).sqliteStatement, SQLITE_STMTSTATUS_REPREPARE, 0)
        }
        #expect(recompiled == 0)
    }

    @Test("a read is one snapshot: another connection's write shows once it ends")
    func readIsOneSnapshot() throws {
        try withStore { store, profile in
            // Another connection (another process on the profile) writes between the read's two
            // statements: the read does not see it until it ends.
            let other = try DatabaseQueue(path: profile.storage.storeURL.path)
            let (before, during) = try store.read { db in
                let before = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM meta") ?? -1
                try other.write { db in try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('test', x'00')") }
                return (before, try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM meta") ?? -1)
            }
            #expect(before == during)
            #expect(try store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM meta") } == before + 1)
        }
    }

    @Test("records read by hand decode every column as they were written, set and unset")
    func recordsDecodeByHand() throws {
        try withStore { store, _ in
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            func same<Record: StoreRecord>(_ written: Record, _ read: Record?) throws -> Bool {
                guard let read else { return false }
                return try encoder.encode(written) == encoder.encode(read)
            }
            let time = Date(timeIntervalSince1970: 1_795_600_000.125)
            let full = MessageRecord(
                seq: 7, messageID: UUID(), peerID: UUID(), direction: .outgoing, senderDevice: UUID(), sentAt: time,
                body: Data([1, 2]), unreadableReason: "why", state: .failed, failure: "refused", isRead: true,
                envelope: 2, editedAt: time + 1, deletedAt: time + 2, expiresAt: time + 3)
            let bare = MessageRecord(
                seq: 8, messageID: UUID(), peerID: UUID(), direction: .incoming, senderDevice: nil, sentAt: time,
                body: nil, unreadableReason: nil, state: .received, failure: nil, isRead: false, envelope: nil,
                editedAt: nil, deletedAt: nil, expiresAt: nil)
            let queued = OutboxRecord(
                messageID: full.messageID, peerID: full.peerID, attempts: 3, confirmed: true, createdAt: time,
                nextAttemptAt: time + 4, lastError: "away")
            let control = ControlRecord(
                seq: 1, messageID: UUID(), peerID: UUID(), sealed: Data([3]), attempts: 2,
                nextAttemptAt: time + 5, lastError: "away", createdAt: time)
            let key = ContactKeyRecord(
                userID: UUID(), deviceID: UUID(), fingerprint: "f", identity: Data([4]), firstSeen: time,
                retiredAt: time + 6)
            let contact = ContactRecord(
                userID: UUID(), emailLookup: Data([5]), sealed: Data([6]), verifiedDigest: Data([7]))
            try store.write { db in
                for record in [full, bare] { try record.insert(db) }
                try queued.insert(db)
                try control.insert(db)
                try key.insert(db)
                try contact.insert(db)
                let messages = try MessageRecord.fetchAll(db, sql: "SELECT * FROM message ORDER BY seq")
                #expect(messages.count == 2)
                #expect(try same(full, messages.first))
                #expect(try same(bare, messages.last))
                #expect(try same(queued, OutboxRecord.fetchOne(db, sql: "SELECT * FROM outbox")))
                #expect(try same(control, ControlRecord.fetchOne(db, sql: "SELECT * FROM control_outbox")))
                #expect(try same(key, ContactKeyRecord.fetchOne(db, sql: "SELECT * FROM contact_key")))
                #expect(try same(contact, ContactRecord.fetchOne(db, sql: "SELECT * FROM contact")))
            }
        }
    }

    @Test("identities kept parsed: each bytes give their own identity, and bad bytes still fail")
    func parsedIdentities() throws {
        let parsed = ParsedIdentities()
        let one = try PrivateIdentity.generate().publicIdentity
        let two = try PrivateIdentity.generate().publicIdentity
        for _ in 0..<2 {
            #expect(try parsed.identity(one.serialized).serialized == one.serialized)
            #expect(try parsed.identity(two.serialized).serialized == two.serialized)
        }
        var tampered = one.serialized
        tampered[tampered.count - 1] ^= 1
        #expect(throws: (any Error).self) { try parsed.identity(tampered) }
        #expect(throws: (any Error).self) { try parsed.identity(tampered) }
    }

    @Test("a sealed body moved to another row is detected, not shown")
    func swappedCiphertext() throws {
        try withStore { store, _ in
            let peer = UUID()
            try store.insert(
                ["first", "second"].map {
                    .init(
                        id: UUID(), peer: peer, direction: .incoming, senderDevice: nil, sentAt: Date(),
                        text: $0, unreadableReason: nil, state: .received)
                })
            try store.database.write { db in
                try db.execute(sql: "UPDATE message SET body = (SELECT body FROM message WHERE seq = 1) WHERE seq = 2")
            }
            #expect(throws: ConfidantKitError.self) { try store.history(with: peer, limit: 10) }
        }
    }

    @Test(
        "an observed chat opens only lines it has not opened, keeps only the lines it shows, and still refuses a moved body"
    )
    func openedTextsFollowTheLines() throws {
        try withStore { store, _ in
            let peer = UUID()
            let me = UUID()
            func message(_ text: String, files: Int = 0) -> LocalStore.NewMessage {
                let id = UUID()
                return .init(
                    id: id, peer: peer, direction: .incoming, senderDevice: nil, sentAt: Date(), text: text,
                    unreadableReason: nil, state: .received,
                    attachments: (0..<files).map { index in
                        AttachmentPointer(
                            id: UUID(), blobID: UUID(), capability: "cap", key: Data(repeating: 7, count: 32),
                            digest: String(repeating: "ab", count: 32), size: 5, contentType: "text/plain",
                            name: "\(text)-\(index).txt", thumbnail: nil)
                    })
            }
            let first = message("first", files: 2)
            try store.insert([first, message("second"), message("third", files: 1)])
            let texts = OpenedTexts()
            func fetch(limit: Int = 10) throws -> [ChatMessage] {
                try store.database.read { db in try store.history(with: peer, limit: limit, db, texts: texts) }
            }
            var lines = try fetch()
            #expect(lines.map(\.text) == ["first", "second", "third"])
            // Each message's own attachments, in order (one statement for all of them).
            #expect(lines.map { $0.attachments.map(\.name) } == [["first-0.txt", "first-1.txt"], [], ["third-0.txt"]])
            #expect(texts.opened == 3)
            lines = try fetch()
            #expect(lines.map(\.text) == ["first", "second", "third"])
            #expect(texts.opened == 3, "nothing changed, nothing opened again")

            try store.insert([message("fourth")])
            #expect(try fetch().map(\.text) == ["first", "second", "third", "fourth"])
            #expect(texts.opened == 4, "only the new line is opened")

            // An edit seals the text anew: that line is opened again and shows the new text.
            let edited = try store.database.write { db in
                try store.applyEdit(
                    lines[1].id, text: "second, edited", author: peer, me: me, conversation: peer, inGroup: false,
                    at: Date(), db)
            }
            #expect(edited)
            #expect(try fetch().map(\.text) == ["first", "second, edited", "third", "fourth"])
            #expect(texts.opened == 5)

            // Deleted for everyone: the line stays without text, and its text is no longer kept.
            let deleted = try store.database.write { db in
                try store.applyDeletion(
                    first.id, author: peer, me: me, conversation: peer, inGroup: false, at: Date(), db)
            }
            #expect(deleted != nil)
            #expect(try fetch().map(\.text) == [nil, "second, edited", "third", "fourth"])
            #expect(texts.keptLines == Set(lines.dropFirst().map(\.sequence) + [lines[2].sequence + 1]))

            // Lines scrolled out of the fetch leave it too.
            #expect(try fetch(limit: 2).map(\.text) == ["third", "fourth"])
            #expect(texts.keptLines.count == 2)

            // A body moved from another line is not taken for the kept text: it is opened, and refused.
            try store.database.write { db in
                try db.execute(
                    sql: "UPDATE message SET body = (SELECT body FROM message WHERE seq = ?) WHERE seq = ?",
                    arguments: [lines[2].sequence, lines[2].sequence + 1])
            }
            #expect(throws: ConfidantKitError.self) { try fetch(limit: 2) }
        }
    }

    @Test("the control queue is looked at only when something may be in it: once opened, after a queueing, when asked")
    func controlsMark() throws {
        struct Failure: Error {}
        try withStore { store, _ in
            #expect(store.takeControlsMark(), "a store just opened may hold controls left from before")
            #expect(!store.takeControlsMark())
            let peer = UUID()
            func queue(_ db: Database) throws {
                try store.queueControl(
                    ChatPayload(conversation: peer, content: .receipt(Receipt(.delivered, messageIDs: [UUID()]))),
                    to: peer, now: Date(), db)
            }
            try store.write { db in try queue(db) }
            #expect(store.takeControlsMark())
            #expect(!store.takeControlsMark())
            // A queueing rolled back leaves it set: one read more, nothing missed.
            #expect(throws: Failure.self) {
                try store.write { db in
                    try queue(db)
                    throw Failure()
                }
            }
            #expect(store.takeControlsMark())
            store.controlsMayWait()
            #expect(store.takeControlsMark())
            #expect(try store.controls().count == 1)
        }
    }

    @Test("marking read is one deferred commit that queues one read receipt for the incoming lines only")
    func markReadIsOneDeferredCommit() throws {
        try withStore { store, _ in
            let peer = UUID()
            func message(_ text: String, _ direction: ChatMessage.Direction) -> LocalStore.NewMessage {
                .init(
                    id: .timeOrdered(at: Date()), peer: peer, direction: direction, senderDevice: nil, sentAt: Date(),
                    text: text, unreadableReason: nil, state: direction == .incoming ? .received : .sent)
            }
            let incoming = [message("one", .incoming), message("two", .incoming)]
            try store.insert(incoming + [message("mine", .outgoing)])
            try store.insert([
                .init(
                    id: UUID(), peer: UUID(), direction: .incoming, senderDevice: nil, sentAt: Date(),
                    text: "elsewhere",
                    unreadableReason: nil, state: .received)
            ])
            let before = store.commitCounts
            let read = try store.markRead(peer: peer, queueingReceipts: true, now: Date())
            #expect(Set(read) == Set(incoming.map(\.id)))
            let after = store.commitCounts
            #expect(after.count == before.count + 1, "one transaction")
            #expect(after.synced == before.synced, "not synced on its own")
            let queued = try store.controls()
            #expect(queued.count == 1)
            #expect(queued.first?.peer == peer)
            #expect(queued.first?.payload.content == .receipt(Receipt(.read, messageIDs: read)))
            #expect(try store.history(with: peer, limit: 10).allSatisfy(\.isRead))
            // Nothing unread: nothing returned, nothing queued.
            #expect(try store.markRead(peer: peer, queueingReceipts: true, now: Date()).isEmpty)
            #expect(try store.controls().count == 1)
            // Without receipts, lines are marked read and nothing is queued.
            try store.insert([message("three", .incoming)])
            #expect(try store.markRead(peer: peer, now: Date()).count == 1)
            #expect(try store.controls().count == 1)
        }
    }

    @Test("a new device key rewraps the data key; the old key no longer opens the store")
    func rewrap() throws {
        let profile = TestProfile()
        defer { profile.remove() }
        try profile.storage.prepare()
        let old = try PrivateIdentity.generate()
        let new = try PrivateIdentity.generate(deviceID: old.deviceID)
        let store = try LocalStore.open(at: profile.storage.storeURL, identity: old)
        try store.saveContact(Contact(id: UUID(), email: "a@example.com", displayName: "A"))
        try store.rewrap(for: new)
        #expect(
            try LocalStore.open(at: profile.storage.storeURL, identity: new).contact(email: "a@example.com")?
                .displayName == "A")
        #expect(throws: ConfidantKitError.self) { try LocalStore.open(at: profile.storage.storeURL, identity: old) }
    }

    @Test("relative times read as the seed's \"time ago\"")
    func relativeTimes() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(RelativeTime.describe(now.addingTimeInterval(-20), now: now) == "just now")
        #expect(RelativeTime.describe(now.addingTimeInterval(-5 * 60), now: now) == "5 min ago")
        #expect(RelativeTime.describe(now.addingTimeInterval(-3 * 3600 - 5), now: now) == "3 h ago")
        #expect(RelativeTime.describe(now.addingTimeInterval(-30 * 3600), now: now) == "yesterday")
        #expect(RelativeTime.describe(now.addingTimeInterval(-4 * 86400), now: now) == "4 days ago")
        #expect(RelativeTime.describe(Date(timeIntervalSince1970: 1_700_000_000), now: now) == "2023-11-14")
    }

    @Test("server addresses: scheme and host required, nothing after the host")
    func serverAddresses() throws {
        #expect(try ServerAddress.parse("http://127.0.0.1:8080/").absoluteString == "http://127.0.0.1:8080")
        #expect(try ServerAddress.parse("https://chat.example.com").absoluteString == "https://chat.example.com")
        for bad in ["127.0.0.1:8080", "ftp://x.example", "http://", "http://h/v1", "http://h?x=1"] {
            #expect(throws: ConfidantKitError.invalidServerURL(bad)) { try ServerAddress.parse(bad) }
        }
    }
}
