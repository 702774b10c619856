import ConfidantAPI
import ConfidantAuth
import ConfidantCrypto
import Crypto
import Foundation

/// Whether a peer's current keys are the ones the user verified, and the safety numbers to compare.
public struct PeerVerification: Sendable {
    /// Whether the keys were verified, and still are.
    public enum State: Sendable, Equatable { case unverified, verified, changedSinceVerification }

    /// The peer.
    public let contact: Contact
    /// The 60-digit safety number with each of the peer's current devices.
    public let safetyNumbers: [(deviceID: UUID, number: SafetyNumber)]
    /// Whether these keys are the ones you verified.
    public let state: State
}

/// The server's directory and the device keys of its users as this profile knows them: finding
/// contacts, refreshing keys (recording changes and the seed's "security key changed" notice),
/// and verification by safety numbers.
struct KeyDirectory: Sendable {
    let relay: RelayClient
    let store: LocalStore
    let identity: PrivateIdentity
    let me: UUID
    let events: MessengerEvents
    let now: @Sendable () -> Date
    /// Shared by the copies of this directory (the sender's, the receiver's).
    let fetchedKeys = FetchedKeys()

    /// How long keys fetched for sending are used without asking the relay again. The relay
    /// refuses a send whose devices are not exactly the recipient's current ones
    /// (`device_mismatch`), and the sender then fetches them again, so a list that went stale
    /// costs a retry, never a message sealed for the wrong devices (a new key is a new device).
    /// What the user looks at — devices, safety numbers — is always fetched.
    static let keysFreshFor: TimeInterval = 60

    /// The user's current devices for sending: as fetched less than `keysFreshFor` ago, or
    /// fetched now (`refreshKeys`). A user who had no device is always asked about again: with
    /// none, nothing is sent, and so the relay cannot say that one appeared.
    func keysForSending(of user: UUID) async throws -> [PublicIdentity] {
        if let keys = fetchedKeys.keys(of: user, since: now().addingTimeInterval(-Self.keysFreshFor)), !keys.isEmpty {
            return keys
        }
        return try await refreshKeys(of: user)
    }

    /// The relay said `user`'s devices are not the ones sent to: the next send fetches them.
    func devicesChanged(of user: UUID) {
        fetchedKeys.forget(user)
    }

    /// Users on the server except this one, ordered by e-mail; `search` is a prefix of the e-mail, the name or a word of the name ("dyl" finds Bob Dylan).
    func users(search: String? = nil, limit: Int = 1000) async throws -> [Contact] {
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
                guard let id = UUID(uuidString: user.id) else {
                    throw ConfidantKitError.badResponse("a user id is not a UUID: \(user.id)")
                }
                contacts.append(
                    Contact(id: id, email: user.email, displayName: user.displayName, avatarDigest: user.avatarDigest))
            }
            after = page.next
        } while after != nil && contacts.count < limit
        return contacts
    }

    /// A user by e-mail: from the contacts this profile knows, else from the server's directory.
    func contact(email: String) async throws -> Contact {
        let normalized = (try? EmailAddress(email).value) ?? email.lowercased()
        if let known = try store.contact(email: normalized) { return known }
        guard
            let found = try await users(search: normalized, limit: 200).first(where: {
                $0.email.lowercased() == normalized
            })
        else {
            throw ConfidantKitError.unknownUser(email)
        }
        try store.saveContact(found)
        return found
    }

    /// Fetches the user's current devices and records them, with a notice for each change;
    /// returns them.
    @discardableResult
    func refreshKeys(of user: UUID) async throws -> [PublicIdentity] {
        let keys: Components.Schemas.UserKeys
        switch try await relay.call({ try await $0.getUser(path: .init(userId: user.canonicalString)) }) {
        case .ok(let ok): keys = try ok.body.json
        case .default(let status, let response): throw problem(status, response)
        }
        let contact = Contact(
            id: user, email: keys.user.email, displayName: keys.user.displayName, avatarDigest: keys.user.avatarDigest)
        let identities = try keys.devices.map { device in
            do {
                return try PublicIdentity(serialized: device.identity.data)
            } catch {
                throw ConfidantKitError.badResponse(
                    "device \(device.deviceId) of \(contact.email) has an invalid identity (\(error))")
            }
        }
        let retiredAt = await retirementTimes(of: user, current: identities)
        let now = now()
        let notices = try store.transaction { transaction in
            // The contact as it came, written only when it changed: a refresh that finds nothing
            // new (nearly every one, once a minute per peer sent to) then writes nothing, so it
            // neither syncs nor makes the sends' kept contexts stale (`SendingContexts`), which
            // cost the next send a rolled-back attempt and a fresh read.
            if user != me, try store.contacts([user], transaction.db)[user] != contact {
                try LocalStore.save(try store.contactRecord(contact), transaction.db)
            }
            let changes = try LocalStore.applyCurrentKeys(
                of: user, identities, now: now, retiredAt: retiredAt, in: transaction)
            guard user != me else {
                // The account's own other devices: a device signing in to it is news the user
                // must see (it may not be theirs); this device's own key is not.
                return try store.insert(
                    changes.filter { $0.deviceID != identity.deviceID }.map { change in
                        LocalStore.NewMessage(
                            id: change.noticeID, peer: me, direction: .notice, senderDevice: change.deviceID,
                            sentAt: now, text: change.accountNoticeText, unreadableReason: nil, state: .received,
                            startsUnread: true, noticeKind: .keyChange)
                    }, transaction.db)
            }
            return try store.insert(
                changes.map { change in
                    LocalStore.NewMessage(
                        id: change.noticeID, peer: user, direction: .notice, senderDevice: change.deviceID, sentAt: now,
                        text: change.noticeText(name: contact.displayName), unreadableReason: nil, state: .received,
                        noticeKind: .keyChange)
                }, transaction.db)
        }
        for notice in notices { events.emit(.message(notice)) }
        fetchedKeys.record(identities, of: user, at: now)
        return identities
    }

    /// Every key the user's devices ever had, as the relay lists them (not recorded): what checks
    /// a group change signed before its author's key was replaced.
    func keyHistory(of user: UUID) async throws -> [PublicIdentity] {
        switch try await relay.call({ try await $0.keyHistory(path: .init(userId: user.canonicalString)) }) {
        case .ok(let ok): return try ok.body.json.compactMap { try? PublicIdentity(serialized: $0.identity.data) }
        case .default(let status, let response): throw problem(status, response)
        }
    }

    /// When the relay retired the keys this profile still has as current but the relay no
    /// longer lists, by fingerprint: envelopes the relay stored after that are refused (see
    /// `SessionCipher.open`), and the relay's clock is the one their times are stamped with.
    /// Empty when nothing was retired or the history cannot be read (the local time is used).
    private func retirementTimes(of user: UUID, current: [PublicIdentity]) async -> [String: Date] {
        let listed = Set(current.map { IdentityFingerprint($0).description })
        guard let known = try? store.keys(of: user, includingRetired: false),
            known.contains(where: { !listed.contains($0.fingerprint) }),
            case .ok(let ok)? = try? await relay.call({
                try await $0.keyHistory(path: .init(userId: user.canonicalString))
            }),
            let history = try? ok.body.json
        else { return [:] }
        var times: [String: Date] = [:]
        for key in history {
            guard let retiredAt = key.retiredAt, let identity = try? PublicIdentity(serialized: key.identity.data)
            else { continue }
            times[IdentityFingerprint(identity).description] = retiredAt
        }
        return times
    }

    // MARK: Verification

    private static func digest(_ identities: [PublicIdentity]) -> Data {
        verificationDigest(identities.map(\.serialized))
    }

    /// What "verified" stores: SHA-256 over the peer's serialized identities, sorted.
    static func verificationDigest(_ serializedIdentities: [Data]) -> Data {
        var hash = SHA256()
        for serialized in serializedIdentities.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            hash.update(data: serialized)
        }
        return Data(hash.finalize())
    }

    /// Refreshes the peer's keys when the server is reachable, then compares with what was verified.
    func verification(of contact: Contact) async throws -> PeerVerification {
        let current: [PublicIdentity]
        do {
            current = try await refreshKeys(of: contact.id)
        } catch ConfidantKitError.serverUnreachable {
            current = try store.keys(of: contact.id).map(\.identity)
        }
        let numbers = current.map { (deviceID: $0.deviceID, number: SafetyNumber(identity.publicIdentity, $0)) }
        let state: PeerVerification.State
        switch try store.verifiedDigest(of: contact.id) {
        case nil: state = .unverified
        case let verified? where verified == Self.digest(current): state = .verified
        default: state = .changedSinceVerification
        }
        return PeerVerification(contact: contact, safetyNumbers: numbers, state: state)
    }

    /// ``verification(of:)``'s state from the keys this profile has, without the server.
    func localState(of user: UUID) throws -> PeerVerification.State {
        guard let verified = try store.verifiedDigest(of: user) else { return .unverified }
        return try keysChanged(of: user, verifiedDigest: verified) ? .changedSinceVerification : .verified
    }

    /// Marks the peer's current keys (as last fetched) as verified.
    func markVerified(_ contact: Contact) throws {
        try store.setVerifiedDigest(Self.digest(store.keys(of: contact.id).map(\.identity)), of: contact.id)
    }

    /// Whether the peer was verified and their keys changed since.
    func keysChangedSinceVerification(_ user: UUID) throws -> Bool {
        try keysChanged(of: user, verifiedDigest: store.verifiedDigest(of: user))
    }

    /// ``keysChangedSinceVerification(_:)`` with what the user verified read already.
    func keysChanged(of user: UUID, verifiedDigest verified: Data?) throws -> Bool {
        guard let verified else { return false }
        return try verified != Self.digest(store.keys(of: user).map(\.identity))
    }

    /// Sending anyway accepts the new keys, as Signal does: the contact is no longer marked
    /// verified, and later sends do not ask again.
    func acceptChangedKeys(of user: UUID) throws {
        try store.setVerifiedDigest(nil, of: user)
    }
}
