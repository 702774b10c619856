import ConfidantKit
import Foundation
import Leaf
import Logging
import Synchronization
import Vapor

/// `confidant app`: the client as a local web app. This process holds every key and does every
/// cryptographic operation (ConfidantKit); the browser only shows HTML rendered here and posts
/// forms back, over 127.0.0.1.
///
/// ```swift
/// let app = try await AppServer(configuration: configuration)
/// let url = try await app.start()   // http://127.0.0.1:PORT/?token=…
/// …
/// await app.shutdown()
/// ```
public final class AppServer: Sendable {
    private let application: Application
    private let secrets = LaunchSecrets()
    private let port = BoundPort()
    private let session: AppSession
    private let configuration: AppConfiguration
    private let idleLock: VaultIdleLock
    /// Locks the vault once the app went unused for the configured while.
    private let idleWatch = Mutex<Task<Void, Never>?>(nil)

    /// Prepares the app for `configuration`; nothing listens until `start`.
    public init(configuration: AppConfiguration, logger: Logger = Logger(label: "confidant.app")) async throws {
        self.configuration = configuration
        idleLock = VaultIdleLock(limit: configuration.vaultIdleLock)
        var environment = Environment(name: "production", arguments: ["confidant"])
        environment.commandInput.arguments = []
        let application = try await Application.make(environment)
        application.logger = logger
        self.application = application
        session = await AppSession(configuration: configuration, logger: logger)

        application.http.server.configuration.hostname = "127.0.0.1"
        application.http.server.configuration.port = configuration.port
        application.http.server.configuration.serverName = "confidant-app"
        application.routes.defaultMaxBodySize = ByteCount(value: configuration.maxFormBytes)
        application.views.use(.leaf)
        application.leaf.sources = .singleSource(EmbeddedTemplates())
        application.middleware = Middlewares()
        application.middleware.use(SecurityHeaders())
        application.middleware.use(
            LocalAccessGuard(
                secrets: secrets, port: port, maxFormBytes: configuration.maxFormBytes,
                maxUploadBytes: configuration.maxUploadBytes))
        application.middleware.use(ActivityRecorder(idleLock: idleLock))

        let context = AppContext(session: session, secrets: secrets)
        application.get(.asset(.key)) { request -> Response in
            guard let name = request.text(.name), let asset = EmbeddedResources.assets[name] else {
                throw Abort(.notFound, reason: "There is no such file in the app.")
            }
            return Self.response(asset)
        }
        application.get(.favicon) { _ in
            guard let icon = EmbeddedResources.assets["icon.svg"] else {
                throw Abort(.notFound, reason: "There is no such file in the app.")
            }
            return Self.response(icon)
        }
        WelcomePages(context: context).register(on: application)
        ConversationPages(context: context).register(on: application)
        ChatPages(context: context).register(on: application)
        DraftPages(context: context).register(on: application)
        SearchPages(context: context, indexing: SearchIndexing()).register(on: application)
        ChatFilePages(context: context).register(on: application)
        MessageChangePages(context: context).register(on: application)
        VerifyPages(context: context).register(on: application)
        VaultPages(context: context).register(on: application)
        AvatarPages(context: context, cache: AvatarCache()).register(on: application)
        SettingsPages(context: context).register(on: application)
        GroupPages(context: context).register(on: application)
        GroupMessagePages(context: context).register(on: application)
    }

    private static func response(_ asset: (bytes: [UInt8], type: HTTPMediaType)) -> Response {
        var headers = HTTPHeaders()
        headers.contentType = asset.type
        headers.replaceOrAdd(name: .cacheControl, value: "no-cache")
        return Response(status: .ok, headers: headers, body: .init(buffer: ByteBuffer(bytes: asset.bytes)))
    }

    /// Opens the profile (when the passphrase was given), starts listening on 127.0.0.1 and
    /// returns the one-time URL that signs a browser in.
    public func start() async throws -> URL {
        await session.start()
        try await application.asyncBoot()
        try await application.server.start(address: .hostname("127.0.0.1", port: configuration.port))
        let bound = application.http.server.shared.localAddress?.port ?? configuration.port
        port.set(bound)
        if idleLock.limit != nil {
            let (idleLock, session) = (idleLock, session)
            idleWatch.withLock {
                $0 = Task {
                    while !Task.isCancelled {
                        do { try await Task.sleep(for: idleLock.checkInterval) } catch { return }
                        guard idleLock.isIdle else { continue }
                        await MainActor.run { if session.vault.isUnlocked { session.vault.lock() } }
                    }
                }
            }
        }
        guard let url = URL(string: "http://127.0.0.1:\(bound)/?token=\(secrets.launchToken)") else {
            throw Abort(.internalServerError, reason: "no launch URL for port \(bound)")
        }
        return url
    }

    /// Stops listening and the live connection to the relay.
    public func shutdown() async {
        idleWatch.withLock { $0?.cancel() }
        await session.stop()
        await application.server.shutdown()
        try? await application.asyncShutdown()
    }
}
