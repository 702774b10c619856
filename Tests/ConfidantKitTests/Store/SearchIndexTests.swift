import ConfidantCrypto
import ConfidantTestSupport
import Crypto
import Foundation
import GRDB
import Testing

@testable import ConfidantKit

@Suite("Local search")
struct SearchIndexTests {
    @Test("words fold case, accents and width; a word is indexed by its prefixes of 3 to 6 characters")
    func terms() {
        #expect(SearchTerms.words("Café au LAIT, ＡＢＣ—Ёлка 42x!") == ["cafe", "au", "lait", "abc", "елка", "42x"])
        #expect(SearchTerms.indexKeys(of: ["at meeting"]) == ["at", "mee", "meet", "meeti", "meetin"])
        #expect(SearchTerms.indexKeys(of: ["internationalisation"]).map(\.count).sorted() == Array(3...6))
        #expect(SearchTerms.queryWords("Meet meet AT the") == ["meet", "at", "the"])
        #expect(SearchTerms.matches(["meet", "at"], in: ["Meeting at noon"]))
        #expect(!SearchTerms.matches(["at"], in: ["attack"]), "a word of two characters is found whole only")
        #expect(!SearchTerms.matches(["internationalx"], in: ["internationalisation"]))
        #expect(SearchTerms.matches(["internationa"], in: ["Internationalisation"]))
        let words = (0..<5_000).map { "word\($0)" }.joined(separator: " ")
        #expect(SearchTerms.indexKeys(of: [words]).count <= SearchTerms.maximumWordsPerMessage * 8)
    }

    @Test(
        "a key's token: HMAC-SHA256 under HKDF(data key, \"Confidant local search v1\"), first 4 bytes (known answers)")
    func tokenKnownAnswers() {
        // From Python's hmac and hashlib, following docs/PROTOCOL.md §8 alone.
        let key = LocalDataKey(key: SymmetricKey(data: Data(1...32)))
        #expect(key.searchToken("meet") == -267_684_557)
        #expect(key.searchToken("mee") == -1_856_892_137)
        #expect(key.searchToken("елка") == 1_495_536_948)
    }

    struct Fixture {
        let profile = TestProfile()
        let store: LocalStore
        let peer = Contact(id: UUID(), email: "search-peer@example.com", displayName: "Search Peer")
        let other = Contact(id: UUID(), email: "search-other@example.com", displayName: "Other Peer")

        init() throws {
            try profile.storage.prepare()
            store = try LocalStore.open(at: profile.storage.storeURL, identity: PrivateIdentity.generate())
            try store.saveContact(peer)
            try store.saveContact(other)
        }

        @discardableResult
        func add(
            _ text: String?, with contact: Contact, files: [String] = [], direction: ChatMessage.Direction = .incoming
        )
            throws -> ChatMessage
        {
            let pointers = files.map {
                AttachmentPointer(
                    id: UUID(), blobID: UUID(), capability: "cap", key: Data(repeating: 7, count: 32),
                    digest: String(repeating: "ab", count: 32), size: 5, contentType: "text/plain", name: $0,
                    thumbnail: nil)
            }
            let stored = try store.insert([
                .init(
                    id: UUID(), peer: contact.id, direction: direction, senderDevice: UUID(), sentAt: Date(),
                    text: text, unreadableReason: nil, state: direction == .incoming ? .received : .sent,
                    attachments: pointers)
            ])
            return try #require(stored.first)
        }

        func found(_ query: String, in conversation: UUID? = nil) throws -> [String] {
            try store.read { db in try store.search(query, in: conversation, limit: 50, db) }.map {
                $0.message.text ?? $0.message.attachments.first?.name ?? ""
            }
        }

        func indexRows(of message: ChatMessage) throws -> Int {
            try store.read { db in
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM search_token WHERE seq = ?", arguments: [message.sequence])
            } ?? 0
        }
    }

    @Test("finds every word or a word it begins, newest first, in one conversation or all; names of files too")
    func findsMessages() throws {
        let fixture = try Fixture()
        defer { fixture.profile.remove() }
        try fixture.add("Shall we meet at the Café?", with: fixture.peer)
        try fixture.add("The meeting moved to Thursday", with: fixture.peer, direction: .outgoing)
        try fixture.add("unrelated words", with: fixture.other)
        try fixture.add("MEET me there", with: fixture.other)
        try fixture.add(nil, with: fixture.other, files: ["holiday-photos.zip"])

        #expect(
            try fixture.found("meet") == [
                "MEET me there", "The meeting moved to Thursday", "Shall we meet at the Café?",
            ])
        #expect(try fixture.found("meet cafe") == ["Shall we meet at the Café?"])
        #expect(try fixture.found("meet", in: fixture.peer.id).count == 2)
        #expect(try fixture.found("holiday") == ["holiday-photos.zip"])
        #expect(try fixture.found("nowhere").isEmpty)
        #expect(try fixture.found("  ,.!  ").isEmpty, "a query without words finds nothing")
        let hit = try #require(
            try fixture.store.read { db in try fixture.store.search("thursday", in: nil, limit: 5, db) }.first)
        #expect(hit.excerpt == "The meeting moved to Thursday")
    }

    @Test("an edit re-indexes its message; a deleted or expired one leaves no row; the files hold no word")
    func followsChanges() throws {
        let fixture = try Fixture()
        defer { fixture.profile.remove() }
        let me = UUID()
        let edited = try fixture.add("lunch at the walrus bistro", with: fixture.peer)
        #expect(
            try fixture.store.write { db in
                try fixture.store.applyEdit(
                    edited.id, text: "dinner at the narwhal bistro", author: fixture.peer.id, me: me,
                    conversation: fixture.peer.id, inGroup: false, at: Date(), db)
            })
        #expect(try fixture.found("walrus").isEmpty)
        #expect(try fixture.found("narwhal") == ["dinner at the narwhal bistro"])

        var bytes = Data()
        for name in try FileManager.default.contentsOfDirectory(atPath: fixture.profile.directory.path) {
            bytes += try Data(contentsOf: fixture.profile.directory.appendingPathComponent(name))
        }
        for word in ["narwhal", "bistro", "walrus"] {
            #expect(bytes.range(of: Data(word.utf8)) == nil, "\(word) is in the profile's files")
        }

        let deleted = try fixture.add("a secret plan", with: fixture.peer)
        #expect(try fixture.indexRows(of: deleted) > 0)
        _ = try fixture.store.write { db in
            try fixture.store.applyDeletion(
                deleted.id, author: fixture.peer.id, me: me, conversation: fixture.peer.id, inGroup: false,
                at: Date(), db)
        }
        #expect(try fixture.indexRows(of: deleted) == 0, "deleted for everyone")
        let forMe = try fixture.add("another secret", with: fixture.peer)
        _ = try fixture.store.deleteLocally(forMe.id, peer: fixture.peer.id, me: me, now: Date())
        #expect(try fixture.indexRows(of: forMe) == 0, "deleted for me")
        #expect(try fixture.found("secret").isEmpty)
    }

    @Test("messages stored before the index are indexed newest first, in batches, then found")
    func backfill() throws {
        let fixture = try Fixture()
        defer { fixture.profile.remove() }
        for index in 0..<12 { try fixture.add("older note \(index)", with: fixture.peer) }
        // As a store from before the index: no rows, and everything below the next sequence waiting.
        try fixture.store.write { db in
            try db.execute(
                sql: """
                    DELETE FROM search_token;
                    INSERT INTO search_backfill SELECT MAX(seq) + 1 FROM message;
                    """)
        }
        #expect(try fixture.found("older").isEmpty)
        #expect(try fixture.store.read { db in try fixture.store.searchBacklog(db) } == 12)
        #expect(try fixture.store.backfillSearchIndex(batch: 5) == 7)
        #expect(try fixture.found("older").first == "older note 11", "the newest first")
        #expect(try fixture.store.backfillSearchIndex(batch: 5) == 2)
        #expect(try fixture.store.backfillSearchIndex(batch: 5) == 0)
        #expect(try fixture.found("older").count == 12)
        #expect(try fixture.store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM search_backfill") } == 0)
    }
}
