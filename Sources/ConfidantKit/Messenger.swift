import ConfidantAPI
import ConfidantCrypto
import Foundation

/// One signed-in profile: its device identity, local store and server. A façade over the parts
/// that do the work — `KeyDirectory` (contacts, keys, verification), `MessageSender` (outbox and
/// delivery), `MessageReceiver` (sync and live entries), `PrekeyMaintenance` — each of which
/// keeps the protocol decisions in `SessionCipher` and the state in `LocalStore`.
///
/// Open one with ``open(_:passphrase:)``, or sign in with ``register(_:passphrase:server:email:password:displayName:firstName:lastName:answer:allowInsecureHTTP:invite:)``
/// or ``login(_:passphrase:server:email:password:newDeviceKey:answer:allowInsecureHTTP:)``.
public actor Messenger {
    /// This device's identity.
    public nonisolated let identity: PrivateIdentity
    /// The account as stored (the token is nil after `logout`).
    public internal(set) var account: AccountState
    /// Where the live connection stands.
    public private(set) var connection: ConnectionState = .stopped
    nonisolated let store: LocalStore
    let relay: RelayClient
    let directory: KeyDirectory
    let prekeys: PrekeyMaintenance
    let sender: MessageSender
    let attachments: AttachmentTransfer
    let now: @Sendable () -> Date
    let receiver: MessageReceiver
    /// Chats on screen now: what arrives in them is stored read (``ChatViewModel/run()``).
    nonisolated let openChats: OpenChats
    private let stream = StreamSender()
    let eventHub = MessengerEvents()
    private var liveTask: Task<Void, Never>?
    private var expiryTask: Task<Void, Never>?
    /// When the receipts for what arrives live go, and the wait for the first one held now.
    let receiptBatching: ReceiptBatching
    private var heldReceipts: Task<Void, Never>?
    /// What the live stream stored and has yet to acknowledge, across its connections.
    nonisolated let heldAcknowledgements: HeldAcknowledgements

    init(
        identity: PrivateIdentity, account: AccountState, store: LocalStore, retry: RetryPolicy = RetryPolicy(),
        receipts: ReceiptBatching = ReceiptBatching(), acknowledgements: HeldAcknowledgements = HeldAcknowledgements(),
        diagnostics: DeliveryDiagnostics? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.identity = identity
        self.account = account
        self.store = store
        relay = RelayClient(serverURL: account.serverURL, token: account.token)
        let cipher = SessionCipher(
            identity: identity, userID: account.userID, acceptsSeedLegacy: account.seedCompatibility)
        directory = KeyDirectory(
            relay: relay, store: store, identity: identity, me: account.userID, events: eventHub, now: now)
        prekeys = PrekeyMaintenance(relay: relay, store: store, identity: identity)
        attachments = AttachmentTransfer(serverURL: account.serverURL, token: account.token, store: store)
        sender = MessageSender(
            relay: relay, store: store, directory: directory, cipher: cipher, stream: stream, events: eventHub,
            retry: retry, attachments: attachments, diagnostics: diagnostics, now: now)
        openChats = OpenChats(sendsReadReceipts: account.sendsReadReceipts)
        receiver = MessageReceiver(
            relay: relay, store: store, directory: directory, cipher: cipher, prekeys: prekeys, events: eventHub,
            openChats: openChats, now: now)
        self.now = now
        receiptBatching = receipts
        heldAcknowledgements = acknowledgements
    }

    /// The account's user id.
    public var me: UUID { account.userID }

    /// Why the last delivery attempt could not reach the server, for "queued" messages.
    public var lastUnreachable: String? { get async { await sender.lastUnreachable } }

    /// A stream of what happens from now on; each call gets its own stream.
    public func events() -> AsyncStream<MessengerEvent> { eventHub.subscribe() }

    /// Where the live connection stands: now, then after each change (the latest only, for a
    /// reader that falls behind). For a screen's offline banner: it wakes for nothing else.
    public func connectionUpdates() -> AsyncStream<ConnectionState> {
        eventHub.subscribeToConnection(current: connection)
    }

    /// Turns seed compatibility on or off for this profile: whether messages in the seed app's
    /// insecure cipher are opened (off: they show as unreadable). Takes effect the next time the
    /// profile is opened.
    public func setSeedCompatibility(_ enabled: Bool) throws {
        account.seedCompatibility = enabled
        try store.saveAccount(account)
    }

    /// Signs out on the server (best effort when it is unreachable) and forgets the token.
    public func logout() async throws {
        await stopLive()
        _ = try? await relay.call { try await $0.signOut() }
        try forgetToken()
    }

    /// Changes the stored account and saves it.
    func accountChanged(_ change: (inout AccountState) -> Void) throws {
        change(&account)
        try store.saveAccount(account)
    }

    /// Forgets the session token: this profile is signed out until the next login.
    func forgetToken() throws {
        account.token = nil
        try store.saveAccount(account)
    }

    // MARK: Live

    /// Keeps the realtime stream open until `stopLive`: incoming messages arrive as events,
    /// sends go over the stream while it is up, and the outbox is delivered each time the
    /// connection is (re)established.
    public func startLive() {
        guard liveTask == nil, let token = account.token else { return }
        let client = MailboxStreamClient(
            serverURL: account.serverURL, token: token, identity: identity,
            address: DeviceAddress(userID: account.userID, deviceID: identity.deviceID), sender: stream,
            held: heldAcknowledgements)
        let store = store
        let receiver = receiver
        // Disappearing messages go as their time comes (checked each second while live).
        expiryTask = Task { [weak self] in
            while !Task.isCancelled {
                _ = try? await self?.removeExpiredMessages()
                try? await Task.sleep(for: .seconds(1))
            }
        }
        liveTask = Task { [weak self] in
            do {
                try await client.run(
                    cursor: { try store.cursor() },
                    receive: { [weak self] entries in
                        let (stored, cursors, commit) = try await receiver.receiveUnsynced(entries)
                        if !stored.isEmpty { await self?.deliverReceiptsSoon() }
                        return (cursors, commit)
                    },
                    sync: { commit in try await store.syncLog(through: commit) },
                    unacknowledged: { try await receiver.unacknowledged() },
                    state: { [weak self] state in await self?.connectionChanged(state) })
            } catch ConfidantKitError.sessionExpired {
                // `run` reported `signedOut` already.
            } catch {
                await self?.connectionChanged(.stopped)
            }
        }
    }

    /// Closes the live connection, after acknowledging what it stored (`HeldAcknowledgements`)
    /// and sending the receipts held for company (`ReceiptBatching`), for at most 2 s each; what
    /// did not go by then waits for the next connection (acknowledgements) or delivery (receipts).
    /// Sent messages whose copies wait for their background sync are on disk when it returns.
    public func stopLive() async {
        let acknowledgements = heldAcknowledgements
        await ReceiptBatching.wait(
            atMost: ReceiptBatching.closingLimit, for: Task { await acknowledgements.acknowledgeNow() })
        if let held = heldReceipts {
            held.cancel()
            heldReceipts = nil
            if await stream.isConnected {
                let sender = sender
                await ReceiptBatching.wait(
                    atMost: ReceiptBatching.closingLimit, for: Task { _ = try? await sender.deliverOutbox() })
            }
        }
        liveTask?.cancel()
        liveTask = nil
        expiryTask?.cancel()
        expiryTask = nil
        await sender.cancelRetries()
        // Sends from now on go over HTTP, even before the closing socket is noticed.
        await stream.detach()
        // Held while this closed: they go with the next delivery.
        heldReceipts?.cancel()
        heldReceipts = nil
        // The copies of sent messages waiting for their background sync: on disk now.
        await store.backgroundSyncsDone()
    }

    /// Delivers the outbox a moment from now, with the receipts for whatever else arrives by then
    /// (`ReceiptBatching`): what the live stream stored queued its receipts.
    private func deliverReceiptsSoon() {
        guard heldReceipts == nil else { return }
        let batching = receiptBatching
        heldReceipts = Task { [weak self] in
            do { try await batching.sleep(batching.delay) } catch { return }
            guard !Task.isCancelled else { return }
            await self?.deliverHeldReceipts()
        }
    }

    private func deliverHeldReceipts() async {
        heldReceipts = nil
        _ = try? await sender.deliverOutbox()
    }

    private func connectionChanged(_ state: ConnectionState) async {
        connection = state
        eventHub.emit(.connection(state))
        // Not awaited: the stream reports `live` from the loop that reads its frames, and the
        // outbox's sends over that stream wait for receipts the same loop must read.
        if state == .live {
            // What another process on the profile queued and left is looked for too.
            store.controlsMayWait()
            deliverInBackground()
        }
    }
}
