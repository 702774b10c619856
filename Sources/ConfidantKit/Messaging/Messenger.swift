import ConfidantAPI
import ConfidantAuth
import ConfidantCrypto
import Crypto
import Foundation

/// Something a screen may want to react to.
public enum MessengerEvent: Sendable {
    /// A message or notice was stored (received live, by sync, or sent from another device).
    case message(ChatMessage)
    /// An outgoing message changed state (sent, failed, queued).
    case delivery(id: UUID, status: ChatMessage.Status)
    case connection(ConnectionState)
}

/// One signed-in profile: its device identity, local store and server. Sends through the outbox,
/// receives by sync or live stream, keeps peers' keys and warns when they change.
public actor Messenger {
    public nonisolated let identity: PrivateIdentity
    public private(set) var account: AccountState
    public private(set) var connection: ConnectionState = .stopped
    let store: LocalStore
    var relay: RelayClient
    private var subscribers: [UUID: AsyncStream<MessengerEvent>.Continuation] = [:]
    private var liveTask: Task<Void, Never>?
    private var flushing = false
    /// Why the last delivery attempt could not reach the server, for "queued" messages.
    public private(set) var lastUnreachable: String?
    /// Set once this instance has checked its prekeys on the server (see `maintainPrekeys`).
    var prekeysMaintained = false

    private init(identity: PrivateIdentity, account: AccountState, store: LocalStore) {
        self.identity = identity
        self.account = account
        self.store = store
        relay = RelayClient(serverURL: account.serverURL, token: account.token)
    }

    public var me: UUID { account.userID }

    // MARK: Opening a profile

    /// Opens a signed-in profile.
    public static func open(_ profile: ProfileStorage, passphrase: String) throws -> Messenger {
        guard let identity = try profile.keyStore.loadIdentity(passphrase: passphrase),
              FileManager.default.fileExists(atPath: profile.storeURL.path) else { throw ConfidantKitError.notSignedIn }
        let store = try LocalStore.open(at: profile.storeURL, identity: identity)
        guard let account = try store.account() else { throw ConfidantKitError.notSignedIn }
        guard account.token != nil else { throw ConfidantKitError.sessionExpired }
        return Messenger(identity: identity, account: account, store: store)
    }

    /// Creates an account on `server` and signs this profile in to it.
    /// - Parameters:
    ///   - firstName, lastName: as the seed's sign-up form asks; the display name defaults to both.
    ///   - displayName: what others see.
    public static func register(_ profile: ProfileStorage, passphrase: String, server: URL, email: String, password: String,
                                displayName: String? = nil, firstName: String? = nil, lastName: String? = nil) async throws -> Messenger {
        let relay = RelayClient(serverURL: server, token: nil)
        try await ensureFree(profile, passphrase: passphrase, email: email)
        let body = Components.Schemas.SignUpRequest(email: email, password: password, firstName: firstName, lastName: lastName,
                                                    displayName: displayName)
        switch try await relay.call({ try await $0.signUp(body: .json(body)) }) {
        case .created: break
        case .default(let status, let response): throw problem(status, response)
        }
        return try await login(profile, passphrase: passphrase, server: server, email: email, password: password)
    }

    private static func ensureFree(_ profile: ProfileStorage, passphrase: String, email: String) async throws {
        guard let identity = try profile.keyStore.loadIdentity(passphrase: passphrase),
              FileManager.default.fileExists(atPath: profile.storeURL.path),
              let account = try LocalStore.open(at: profile.storeURL, identity: identity).account() else { return }
        if account.email.lowercased() != email.lowercased() { throw ConfidantKitError.profileBelongsToOther(email: account.email) }
    }

    /// Signs the profile in, registering this device's key. The first sign-in creates the device
    /// key; `newDeviceKey` replaces it under the same device id (as reinstalling the app does), after
    /// which messages sealed for the old key cannot be read here.
    /// - Parameter answer: answers the steps beyond the password when the account has a chain
    ///   (arithmetic, e-mail code, TOTP); without it such an account reports `stepUpRequired`.
    public static func login(_ profile: ProfileStorage, passphrase: String, server: URL? = nil, email: String, password: String,
                             newDeviceKey: Bool = false, answer: SignInAnswerer? = nil) async throws -> Messenger {
        try profile.prepare()
        let existing = try profile.keyStore.loadIdentity(passphrase: passphrase)
        var previous: AccountState?
        if let existing, FileManager.default.fileExists(atPath: profile.storeURL.path) {
            previous = try LocalStore.open(at: profile.storeURL, identity: existing).account()
        }
        if let previous, previous.email.lowercased() != email.lowercased() {
            throw ConfidantKitError.profileBelongsToOther(email: previous.email)
        }
        guard let serverURL = server ?? previous?.serverURL else { throw ConfidantKitError.invalidServerURL("(none given)") }
        let identity: PrivateIdentity
        if let existing, !newDeviceKey {
            identity = existing
        } else {
            identity = try PrivateIdentity.generate(deviceID: existing?.deviceID ?? UUID())
        }
        let relay = RelayClient(serverURL: serverURL, token: nil)
        let body = Components.Schemas.SignInRequest(email: email, password: password, identity: .init(identity.publicIdentity.serialized))
        let session: Components.Schemas.Session
        switch try await relay.call({ try await $0.signIn(body: .json(body)) }) {
        case .created(let created):
            session = try created.body.json
        case .default(let status, let response):
            let error = problem(status, response)
            guard error.serverCode == "step_up_required" else { throw error }
            guard let answer else { throw ConfidantKitError.stepUpRequired }
            session = try await relay.signInWithSteps(email: email, password: password, identity: identity.publicIdentity.serialized, answer: answer)
        }
        // The server now knows the new key; keep it before anything else can fail.
        if identity.publicIdentity != existing?.publicIdentity {
            try profile.keyStore.saveIdentity(identity, passphrase: passphrase)
        }
        let store: LocalStore
        if let existing, FileManager.default.fileExists(atPath: profile.storeURL.path) {
            store = try LocalStore.open(at: profile.storeURL, identity: existing)
            if existing.publicIdentity != identity.publicIdentity { try store.rewrap(for: identity) }
        } else {
            store = try LocalStore.open(at: profile.storeURL, identity: identity)
        }
        guard let userID = UUID(uuidString: session.user.id) else { throw ConfidantKitError.storeDamaged("the server sent a malformed user id") }
        let account = AccountState(serverURL: serverURL, userID: userID, deviceID: identity.deviceID, email: session.user.email,
                                   displayName: session.user.displayName, token: session.token, tokenExpiresAt: session.expiresAt)
        try store.saveAccount(account)
        let messenger = Messenger(identity: identity, account: account, store: store)
        try await messenger.publishPrekeys(newDeviceKey: identity.publicIdentity != existing?.publicIdentity)
        return messenger
    }

    /// How this account signs in.
    public func signInSettings() async throws -> SignInSettings {
        switch try await relay.call({ try await $0.getAuthSettings() }) {
        case .ok(let ok): return SignInSettings(try ok.body.json)
        case .default(let status, let response): throw problem(status, response)
        }
    }

    /// Changes how this account signs in; needs the current password.
    public func updateSignInSettings(_ change: SignInSettingsChange, password: String) async throws -> SignInSettings {
        let body = Components.Schemas.AuthSettingsUpdate(password: password, chain: change.chain.map(\.wire), operands: change.operands,
                                                         mapping: change.mapping, codeLength: change.codeLength,
                                                         totpSecret: change.totpSecret, totpCode: change.totpCode)
        switch try await relay.call({ try await $0.updateAuthSettings(body: .json(body)) }) {
        case .ok(let ok): return SignInSettings(try ok.body.json)
        case .default(let status, let response): throw problem(status, response)
        }
    }

    /// Signs out on the server (best effort when it is unreachable) and forgets the token.
    public func logout() async throws {
        stopLive()
        _ = try? await relay.call { try await $0.signOut() }
        account.token = nil
        try store.saveAccount(account)
        relay = RelayClient(serverURL: account.serverURL, token: nil)
    }

    // MARK: Events

    /// A stream of what happens from now on; each call gets its own stream.
    public func events() -> AsyncStream<MessengerEvent> {
        let (stream, continuation) = AsyncStream<MessengerEvent>.makeStream(bufferingPolicy: .bufferingNewest(1000))
        let id = UUID()
        subscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in Task { await self?.unsubscribe(id) } }
        return stream
    }

    private func unsubscribe(_ id: UUID) { subscribers[id] = nil }

    private func emit(_ event: MessengerEvent) {
        for continuation in subscribers.values { continuation.yield(event) }
    }

    // MARK: Directory and keys

    /// Users on the server except this one, ordered by e-mail; `search` is an e-mail or name prefix.
    public func users(search: String? = nil, limit: Int = 1000) async throws -> [Contact] {
        var contacts: [Contact] = []
        var after: String?
        repeat {
            let page: Components.Schemas.UserPage
            let query = Operations.ListUsers.Input.Query(query: search, limit: 200, after: after)
            switch try await relay.call({ try await $0.listUsers(query: query) }) {
            case .ok(let ok): page = try ok.body.json
            case .default(let status, let response): throw problem(status, response)
            }
            for user in page.users {
                guard let id = UUID(uuidString: user.id) else { continue }
                contacts.append(Contact(id: id, email: user.email, displayName: user.displayName))
            }
            after = page.next
        } while after != nil && contacts.count < limit
        return contacts
    }

    /// A user by e-mail: from the contacts this profile knows, else from the server's directory.
    public func contact(email: String) async throws -> Contact {
        let normalized = (try? EmailAddress(email).value) ?? email.lowercased()
        if let known = try store.contact(email: normalized) { return known }
        guard let found = try await users(search: normalized, limit: 200).first(where: { $0.email.lowercased() == normalized }) else {
            throw ConfidantKitError.unknownUser(email)
        }
        try store.saveContact(found)
        return found
    }

    /// A contact this profile has stored, by id.
    public func knownContact(_ id: UUID) throws -> Contact? { try store.contact(id: id) }

    /// Fetches the user's current devices, records them, and stores a notice for each change.
    @discardableResult
    func refreshKeys(of user: UUID) async throws -> [PublicIdentity] {
        let keys: Components.Schemas.UserKeys
        switch try await relay.call({ try await $0.getUser(path: .init(userId: user.canonicalString)) }) {
        case .ok(let ok): keys = try ok.body.json
        case .default(let status, let response): throw problem(status, response)
        }
        let contact = Contact(id: user, email: keys.user.email, displayName: keys.user.displayName)
        if user != me { try store.saveContact(contact) }
        let identities = keys.devices.compactMap { try? PublicIdentity(serialized: $0.identity.data) }
        let changes = try store.applyCurrentKeys(of: user, identities)
        if user != me { try storeNotices(for: changes, contact: contact) }
        return identities
    }

    private func storeNotices(for changes: [KeyChange], contact: Contact) throws {
        let notices = changes.map { change in
            LocalStore.NewMessage(id: change.noticeID, peer: contact.id, direction: .notice, senderDevice: change.deviceID, sentAt: Date(),
                                  text: Self.noticeText(change, name: contact.displayName), unreadableReason: nil, state: "received")
        }
        for stored in try store.insert(notices) { emit(.message(stored)) }
    }

    /// The seed's "tunnel concept" warning.
    static func noticeText(_ change: KeyChange, name: String) -> String {
        switch change.kind {
        case .added, .replaced:
            return "\(name)'s security key changed — messages sent to the old device can't be read there"
        case .removed:
            return "\(name) signed out a device; its key was retired"
        }
    }

    /// The user's keys as this profile knows them, retired ones too.
    public func knownKeys(of user: UUID) throws -> [KnownKey] { try store.keys(of: user, includingRetired: true) }

    /// This account's devices as the server lists them.
    public func devices() async throws -> [PublicIdentity] { try await refreshKeys(of: me) }

    // MARK: Verification

    public enum VerificationState: Sendable, Equatable { case unverified, verified, changedSinceVerification }

    /// The safety number with each of the peer's current devices and whether they were verified.
    public struct PeerVerification: Sendable {
        public let contact: Contact
        public let safetyNumbers: [(deviceID: UUID, number: SafetyNumber)]
        public let state: VerificationState
    }

    private func digest(_ identities: [PublicIdentity]) -> Data {
        var hash = SHA256()
        for serialized in identities.map(\.serialized).sorted(by: { $0.lexicographicallyPrecedes($1) }) { hash.update(data: serialized) }
        return Data(hash.finalize())
    }

    /// Refreshes the peer's keys when the server is reachable, then compares with what was verified.
    public func verification(of contact: Contact) async throws -> PeerVerification {
        let current: [PublicIdentity]
        do {
            current = try await refreshKeys(of: contact.id)
        } catch ConfidantKitError.serverUnreachable {
            current = try store.keys(of: contact.id).map(\.identity)
        }
        let numbers = current.map { (deviceID: $0.deviceID, number: SafetyNumber(identity.publicIdentity, $0)) }
        let state: VerificationState
        switch try store.verifiedDigest(of: contact.id) {
        case nil: state = .unverified
        case let verified? where verified == digest(current): state = .verified
        default: state = .changedSinceVerification
        }
        return PeerVerification(contact: contact, safetyNumbers: numbers, state: state)
    }

    /// Marks the peer's current keys (as last fetched) as verified.
    public func markVerified(_ contact: Contact) throws {
        try store.setVerifiedDigest(digest(store.keys(of: contact.id).map(\.identity)), of: contact.id)
    }

    private func keysChangedSinceVerification(_ user: UUID) throws -> Bool {
        guard let verified = try store.verifiedDigest(of: user) else { return false }
        return try verified != digest(store.keys(of: user).map(\.identity))
    }

    // MARK: Sending

    /// Stores the message, puts it in the outbox and tries to deliver it now. When the server is
    /// unreachable the message stays `pending` and goes with the next `flushOutbox` (or live
    /// reconnect), exactly once: the server deduplicates on the message id.
    /// - Parameter confirmKeyChange: send even though a verified peer's keys changed since.
    public func send(_ text: String, to contact: Contact, confirmKeyChange: Bool = false) async throws -> ChatMessage {
        let bytes = text.utf8.count
        guard bytes > 0 else { throw ConfidantKitError.emptyMessage }
        guard bytes <= ChatPayload.maximumTextBytes else {
            throw ConfidantKitError.messageTooLarge(bytes: bytes, limit: ChatPayload.maximumTextBytes)
        }
        try store.saveContact(contact)
        var peerKeys: [PublicIdentity]?
        do {
            peerKeys = try await refreshKeys(of: contact.id)
            if try keysChangedSinceVerification(contact.id) {
                guard confirmKeyChange else { throw ConfidantKitError.keyChangedSinceVerification(name: contact.displayName) }
            }
        } catch ConfidantKitError.serverUnreachable {
            // Queue it; the outbox delivers when the server is back.
        }
        let message = LocalStore.NewMessage(id: UUID(), peer: contact.id, direction: .outgoing, senderDevice: identity.deviceID, sentAt: Date(),
                                            text: text, unreadableReason: nil, state: "pending")
        guard let stored = try store.insert([message], outbox: true, confirmed: confirmKeyChange).first else { throw ConfidantKitError.storeDamaged("the new message was not stored") }
        emit(.message(stored))
        let status = try await deliver(stored.id, to: contact.id, confirmed: confirmKeyChange, peerKeys: peerKeys)
        return try store.message(id: stored.id, direction: .outgoing) ?? stored.with(status: status)
    }

    /// Delivers everything waiting in the outbox; returns how many went out.
    @discardableResult
    public func flushOutbox() async throws -> Int {
        guard !flushing else { return 0 }
        flushing = true
        defer { flushing = false }
        var sent = 0
        for (id, peer, confirmed) in try store.outbox() {
            if try await deliver(id, to: peer, confirmed: confirmed) == .sent { sent += 1 }
        }
        return sent
    }

    /// Queues a failed message again and tries to deliver it.
    public func retry(_ id: UUID, confirmKeyChange: Bool = false) async throws -> ChatMessage.Status {
        guard try store.requeue(id, confirmed: confirmKeyChange), let message = try store.message(id: id, direction: .outgoing) else { throw ConfidantKitError.notRetryable(id) }
        emit(.delivery(id: id, status: .pending))
        return try await deliver(id, to: message.peer, confirmed: confirmKeyChange)
    }

    /// - Parameter peerKeys: the peer's devices as just fetched, if they were; fetched otherwise
    ///   (and again after a `device_mismatch`).
    private func deliver(_ id: UUID, to peer: UUID, confirmed: Bool, peerKeys fetched: [PublicIdentity]? = nil) async throws -> ChatMessage.Status {
        guard let message = try store.message(id: id, direction: .outgoing), let text = message.text else {
            try store.finish(id, failure: "the message is missing from the local store")
            return .failed("the message is missing from the local store")
        }
        do {
            var fetched = fetched
            for attempt in 0..<2 {
                let peerKeys: [PublicIdentity]
                if let keys = fetched { peerKeys = keys } else { peerKeys = try await refreshKeys(of: peer) }
                fetched = nil
                if try keysChangedSinceVerification(peer) {
                    guard confirmed else {
                        let name = try store.contact(id: peer)?.displayName ?? "the peer"
                        return try fail(id, "held: \(name)'s security key changed after you verified it; check `confidant verify`, then retry")
                    }
                    // Sending anyway accepts the new keys, as Signal does: the contact is no longer
                    // marked verified, and later sends do not ask again.
                    try store.setVerifiedDigest(nil, of: peer)
                }
                guard !peerKeys.isEmpty else { return try fail(id, "the recipient has no signed-in device yet") }
                let ownKeys = try await refreshKeys(of: me).filter { $0.deviceID != identity.deviceID }
                let payload = ChatPayload(conversation: peer, text: text).serialized
                var envelopes: [Components.Schemas.OutgoingEnvelope] = []
                var sessions: [PeerSession] = []
                for (user, key) in peerKeys.map({ (peer, $0) }) + ownKeys.map({ (me, $0) }) {
                    let envelope = try await seal(payload, to: key, user: user, messageID: id, sentAt: message.sentAt, sessions: &sessions)
                    envelopes.append(.init(recipientUserId: user.canonicalString, recipientDeviceId: key.deviceID.canonicalString,
                                           envelope: .init(envelope)))
                }
                // Before anything leaves: a crash after posting must not let these chain keys seal again.
                try store.saveSessions(sessions)
                let batch = Components.Schemas.MessageBatch(messageId: id.canonicalString, envelopes: envelopes)
                switch try await relay.call({ try await $0.sendMessage(body: .json(batch)) }) {
                case .ok:
                    try store.finish(id, failure: nil)
                    emit(.delivery(id: id, status: .sent))
                    return .sent
                case .default(let status, let response):
                    let error = problem(status, response)
                    // A device appeared or went between fetching keys and posting: fetch again once.
                    if error.serverCode == "device_mismatch", attempt == 0 { continue }
                    if error == .sessionExpired { throw error }
                    return try fail(id, error.description)
                }
            }
            return try fail(id, "the recipient's devices kept changing; retry later")
        } catch let error as ConfidantKitError {
            guard case .serverUnreachable = error else { throw error }
            lastUnreachable = error.description
            try store.countAttempt(id)
            return .pending
        }
    }

    private func fail(_ id: UUID, _ reason: String) throws -> ChatMessage.Status {
        try store.finish(id, failure: reason)
        emit(.delivery(id: id, status: .failed(reason)))
        return .failed(reason)
    }

    // MARK: Receiving

    /// Fetches everything waiting on the server, stores it, and acknowledges it; sends the outbox first.
    @discardableResult
    public func sync() async throws -> [ChatMessage] {
        try await maintainPrekeys()
        try await flushOutbox()
        var received: [ChatMessage] = []
        while true {
            let page: Components.Schemas.MailboxPage
            let query = Operations.FetchMailbox.Input.Query(after: try store.cursor(), limit: 200)
            switch try await relay.call({ try await $0.fetchMailbox(query: query) }) {
            case .ok(let ok): page = try ok.body.json
            case .default(let status, let response): throw problem(status, response)
            }
            let (stored, cursors) = try await receive(page.entries)
            received += stored
            if !cursors.isEmpty {
                let acknowledgement = Components.Schemas.StreamAcknowledgement(cursors: cursors)
                switch try await relay.call({ try await $0.acknowledge(body: .json(acknowledgement)) }) {
                case .ok: break
                case .default(let status, let response): throw problem(status, response)
                }
            }
            if !page.hasMore || page.entries.isEmpty { break }
        }
        return received
    }

    /// Opens and stores entries; returns what was newly stored and the cursors to acknowledge.
    func receive(_ entries: [Components.Schemas.MailboxEntry]) async throws -> ([ChatMessage], [Int64]) {
        var messages: [LocalStore.NewMessage] = []
        var batch = SessionBatch()
        for entry in entries {
            switch entry.kind {
            case .keyChange:
                if let change = entry.keyChange, let user = UUID(uuidString: change.userId), user != me {
                    try await refreshKeys(of: user)
                }
            case .envelope:
                if let message = try await open(entry, batch: &batch) { messages.append(message) }
            case .prekeysLow:
                batch.replenish = true
            }
        }
        let stored = try store.insert(messages, cursor: entries.map(\.cursor).max(), sessions: batch.sessions,
                                      prekeys: batch.prekeysChanged ? batch.prekeys : nil)
        for message in stored { emit(.message(message)) }
        if batch.replenish {
            // Best effort: if this fails, the next instance's `maintainPrekeys` sees the low count.
            try? await replenishPrekeys()
        }
        return (stored, entries.map(\.cursor))
    }

    private func open(_ entry: Components.Schemas.MailboxEntry, batch: inout SessionBatch) async throws -> LocalStore.NewMessage? {
        guard let sender = UUID(uuidString: entry.senderUserId) else { return nil }
        let messageID = entry.messageId.flatMap(UUID.init(uuidString:)) ?? UUID()
        func unreadable(_ reason: String, sentAt: Date = entry.receivedAt) -> LocalStore.NewMessage {
            LocalStore.NewMessage(id: messageID, peer: sender, direction: sender == me ? .outgoing : .incoming,
                                  senderDevice: entry.senderDeviceId.flatMap(UUID.init(uuidString:)), sentAt: sentAt, text: nil,
                                  unreadableReason: reason, state: sender == me ? "sent" : "received")
        }
        if sender != me, try store.contact(id: sender) == nil { _ = try? await refreshKeys(of: sender) }
        guard let data = entry.envelope?.data else { return unreadable("the server sent an empty envelope") }
        let wire: WireEnvelope
        do {
            wire = try WireEnvelope(serialized: Data(data))
        } catch {
            return unreadable("the envelope is malformed (\(error))")
        }
        guard wire.sender.userID == sender else { return unreadable("the envelope names another sender than the server reports") }
        var candidates = try store.keys(of: sender, includingRetired: true).filter { $0.deviceID == wire.sender.deviceID }
        if candidates.isEmpty {
            _ = try? await refreshKeys(of: sender)
            candidates = try store.keys(of: sender, includingRetired: true).filter { $0.deviceID == wire.sender.deviceID }
        }
        guard !candidates.isEmpty else { return unreadable("the sending device's key is unknown", sentAt: wire.timestamp) }
        let ordered = candidates.sorted(by: { ($0.retiredAt == nil ? 0 : 1) < ($1.retiredAt == nil ? 0 : 1) }).map(\.identity)
        func message(_ plaintext: Data) -> LocalStore.NewMessage {
            do {
                let payload = try ChatPayload(serialized: plaintext)
                let peer = sender == me ? payload.conversation : sender
                return LocalStore.NewMessage(id: wire.messageID, peer: peer, direction: sender == me ? .outgoing : .incoming,
                                             senderDevice: wire.sender.deviceID, sentAt: wire.timestamp, text: payload.text,
                                             unreadableReason: nil, state: sender == me ? "sent" : "received",
                                             envelopeVersion: Int(wire.version))
            } catch {
                return unreadable("\(error)", sentAt: wire.timestamp)
            }
        }
        switch wire {
        case .ratchet(let envelope):
            switch try openSession(envelope, candidates: ordered, batch: &batch) {
            case .success(let plaintext): return message(plaintext)
            case .failure(let error): return unreadable(Self.reason(error), sentAt: wire.timestamp)
            }
        case .sealed(let envelope):
            var lastError: EnvelopeError?
            for candidate in ordered {
                do {
                    return message(try envelope.open(as: identity, recipientUserID: me, from: candidate))
                } catch {
                    lastError = error
                }
            }
            let reason: String
            switch lastError {
            case .tampered?: reason = "it was sealed for a key this device no longer has (or altered on the way)"
            case .notForThisRecipient?: reason = "it was sealed for another device"
            case let error?: reason = error.description
            case nil: reason = "unknown"
            }
            return unreadable(reason, sentAt: wire.timestamp)
        }
    }

    /// What a placeholder says about a session message that cannot be opened.
    static func reason(_ error: SessionError) -> String {
        switch error {
        case .unknownPrekey: return "it was sealed for a key this device no longer has (\(error))"
        case .tampered, .noSession: return "it belongs to a session this device does not have (or was altered on the way)"
        default: return error.description
        }
    }

    // MARK: Local reads

    /// Conversations, most recent first.
    public func conversations() throws -> [ConversationSummary] { try store.conversations() }

    /// The last `limit` lines with a peer, oldest first.
    public func history(with peer: UUID, limit: Int = 50) throws -> [ChatMessage] { try store.history(with: peer, limit: limit) }

    public func markRead(_ peer: UUID) throws { try store.markRead(peer: peer) }

    // MARK: Live

    /// Keeps the realtime stream open until `stopLive`: incoming messages arrive as events and the
    /// outbox is flushed each time the connection is (re)established.
    public func startLive() {
        guard liveTask == nil, let token = account.token else { return }
        let client = MailboxStreamClient(serverURL: account.serverURL, token: token)
        liveTask = Task { [weak self] in
            do {
                try await client.run(
                    cursor: { [weak self] in try await self?.storedCursor() ?? 0 },
                    receive: { [weak self] entries in try await self?.receive(entries).1 ?? [] },
                    state: { [weak self] state in await self?.connectionChanged(state) })
            } catch {
                await self?.connectionChanged(.stopped)
            }
        }
    }

    public func stopLive() {
        liveTask?.cancel()
        liveTask = nil
    }

    private func storedCursor() throws -> Int64 { try store.cursor() }

    private func connectionChanged(_ state: ConnectionState) async {
        connection = state
        emit(.connection(state))
        if state == .live { _ = try? await flushOutbox() }
    }
}

extension ChatMessage {
    func with(status: Status) -> ChatMessage {
        ChatMessage(id: id, sequence: sequence, peer: peer, direction: direction, sentAt: sentAt, text: text,
                    unreadableReason: unreadableReason, status: status, isRead: isRead, envelopeVersion: envelopeVersion)
    }
}
