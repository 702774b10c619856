import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantKit

/// A throw-away profile directory with cheap scrypt parameters.
struct TestProfile {
    let directory: URL
    let storage: ProfileStorage
    static let passphrase = "profile passphrase"

    init() {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-profile-\(UUID())")
        storage = ProfileStorage(directory: directory, keyParameters: .testing)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    /// The profile's directory made, and a store opened in it for a new device identity.
    func openStore() throws -> LocalStore {
        try storage.prepare()
        return try LocalStore.open(at: storage.storeURL, identity: PrivateIdentity.generate())
    }
}

/// A user registered through ConfidantKit on a test relay, with their own profile.
struct KitUser {
    let profile: TestProfile
    let messenger: Messenger
    /// What this user's outbox did (how each message went, the window of sends).
    let diagnostics: DeliveryDiagnostics
    let email: String
    let password: String
    let name: String

    static func register(_ relay: some RelayEndpoint, name: String) async throws -> KitUser {
        let profile = TestProfile()
        let email = "\(name.lowercased())-\(UUID().uuidString.prefix(8).lowercased())@example.com"
        let password = "correct horse battery \(name)"
        let diagnostics = DeliveryDiagnostics()
        let messenger = try await ProfileSignIn.register(
            profile.storage, passphrase: TestProfile.passphrase, server: relay.baseURL,
            form: .init(email: email, password: password, displayName: name),
            answer: mailedCode(relay, email: email), diagnostics: diagnostics)
        return KitUser(
            profile: profile, messenger: messenger, diagnostics: diagnostics, email: email, password: password,
            name: name)
    }

    /// Registers Alice and Bob on `relay`, runs `body` with them, and removes their profiles
    /// (ending their live connections) however `body` ends.
    static func pair(
        _ relay: some RelayEndpoint, isolation: isolated (any Actor)? = #isolation,
        _ body: (_ alice: KitUser, _ bob: KitUser) async throws -> Void
    ) async throws {
        let alice = try await register(relay, name: "Alice")
        let bob: KitUser
        do {
            bob = try await register(relay, name: "Bob")
        } catch {
            await alice.remove()
            throw error
        }
        do {
            try await body(alice, bob)
        } catch {
            await alice.remove()
            await bob.remove()
            throw error
        }
        await alice.remove()
        await bob.remove()
    }

    /// A relay with Alice and Bob registered on it: `body` runs with the three, and the profiles
    /// and the relay are removed afterwards (awaited), however `body` ends.
    static func pairOnRelay(
        _ kind: TestDatabaseKind = .sqlite, isolation: isolated (any Actor)? = #isolation,
        _ body: (_ relay: TestRelay, _ alice: KitUser, _ bob: KitUser) async throws -> Void
    ) async throws {
        try await TestRelay.run(kind) { relay in
            try await pair(relay) { alice, bob in try await body(relay, alice, bob) }
        }
    }

    /// Runs `body` with `user`, then removes the user's profile (ending its live connection),
    /// awaited, however `body` ends.
    static func removing<T>(
        _ user: KitUser, isolation: isolated (any Actor)? = #isolation, _ body: (KitUser) async throws -> T
    ) async throws -> T {
        do {
            let result = try await body(user)
            await user.remove()
            return result
        } catch {
            await user.remove()
            throw error
        }
    }

    /// The same account signed in from another profile (another device).
    func secondDevice(_ relay: some RelayEndpoint) async throws -> KitUser {
        let profile = TestProfile()
        let diagnostics = DeliveryDiagnostics()
        let messenger = try await ProfileSignIn.login(
            profile.storage, passphrase: TestProfile.passphrase, server: relay.baseURL, email: email,
            password: password, newDeviceKey: false, answer: Self.mailedCode(relay, email: email),
            diagnostics: diagnostics)
        return KitUser(
            profile: profile, messenger: messenger, diagnostics: diagnostics, email: email, password: password,
            name: name)
    }

    /// Answers the e-mail step from the relay's development outbox, as a user reads their mail.
    static func mailedCode(_ relay: some RelayEndpoint, email: String) -> SignInAnswerer {
        let directory = relay.dataDirectory
        return { step in
            guard step.method == .emailCode else { throw ConfidantKitError.stepUpRequired }
            return try SignInOutbox.latestCode(dataDirectory: directory, for: email)
        }
    }

    var contact: Contact {
        get async { Contact(id: await messenger.me, email: email, displayName: name) }
    }

    /// This user's profile opened by a messenger of its own (as another process would open it),
    /// with the waits and the clock given.
    func reopened(
        retry: RetryPolicy = RetryPolicy(), receipts: ReceiptBatching = ReceiptBatching(),
        acknowledgements: HeldAcknowledgements = HeldAcknowledgements(), diagnostics: DeliveryDiagnostics? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) async -> Messenger {
        Messenger(
            identity: messenger.identity, account: await messenger.account, store: messenger.store, retry: retry,
            receipts: receipts, acknowledgements: acknowledgements, diagnostics: diagnostics, now: now)
    }

    func remove() async {
        await messenger.stopLive()
        profile.remove()
    }

    /// The entries this user's relay mailbox holds after `cursor` (after the stored cursor when
    /// nil), fetched without storing or acknowledging them.
    func mailbox(after cursor: Int64? = nil) async throws -> [Components.Schemas.MailboxEntry] {
        let store = messenger.store
        return try await messenger.relay.call {
            try await $0.fetchMailbox(query: .init(after: try cursor ?? store.cursor(), limit: 100))
        }
        .ok.body.json.entries
    }

    /// How many entries ``mailbox(after:)`` finds.
    func mailboxEntries(after cursor: Int64? = nil) async throws -> Int { try await mailbox(after: cursor).count }
}

extension AsyncStream where Element: Sendable {
    /// Waits for the first element that `match` accepts, for at most `seconds`.
    func first(within seconds: Double = 60, where match: @escaping @Sendable (Element) -> Bool) async -> Element? {
        await withTaskGroup(of: Element?.self) { group in
            group.addTask {
                for await event in self where match(event) { return event }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}

extension Messenger {
    /// Starts the live connection and waits, for at most `seconds`, until it is live; whether it
    /// went live.
    func goLive(within seconds: Double = 60) async -> Bool {
        // Subscribed before starting, so that the change to live cannot fall before it.
        let updates = connectionUpdates()
        startLive()
        return await updates.first(within: seconds) { $0 == .live } != nil
    }
}

/// Polls `condition` until it holds, for at most `seconds`; records an issue if it never does.
func waitUntil(
    _ seconds: Double = 60, isolation: isolated (any Actor)? = #isolation, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("condition not met within \(seconds) s")
            return
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}

extension LocalStore.NewQueued {
    /// A new text to `peer`, pending, to queue built on `context`.
    static func text(_ text: String, to peer: UUID, on context: SendingContext?) -> LocalStore.NewQueued {
        LocalStore.NewQueued(
            message: LocalStore.NewMessage(
                id: UUID.timeOrdered(), peer: peer, direction: .outgoing, senderDevice: nil, sentAt: Date(),
                text: text, unreadableReason: nil, state: .pending),
            confirmed: false, context: context)
    }
}
