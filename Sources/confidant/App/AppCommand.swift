import ArgumentParser
import ConfidantApp
import ConfidantKit
import Foundation

/// `confidant app`: the graphical client, served to your browser by this process on 127.0.0.1.
struct AppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app", abstract: "Open Confidant in your browser (served by this process on 127.0.0.1).",
        discussion: """
            Keys and plaintext stay in this process; the browser shows pages rendered here. The first line \
            printed is the link that signs a browser in (once; restart for a new one). The profile \
            passphrase comes from --passphrase-file or CONFIDANT_PASSPHRASE, or the page asks for it.
            """)

    @OptionGroup var profile: ProfileOptions
    @Option(name: .long, help: "Read the profile passphrase from the first line of this file.")
    var passphraseFile: String?
    @Option(name: .long, help: "Port on 127.0.0.1 (0 picks a free one).") var port = 0
    @Flag(name: .long, help: "Do not open a browser; only print the link.") var noOpen = false
    @Option(name: .long, help: "The server the sign-in form proposes.") var server = "http://127.0.0.1:8080"
    @Option(name: .long, help: "Lock the vault after this many minutes without use (0: only with its Lock button).")
    var lockVaultAfter = 15
    @Flag(name: .long, help: "Accept http:// to a server on another machine (loopback is always allowed).")
    var insecureHttp = false

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port is 0…65535") }
        guard (0...1_440).contains(lockVaultAfter) else {
            throw ValidationError("--lock-vault-after is 0 (never by itself) to 1440 minutes, got \(lockVaultAfter)")
        }
    }

    func run() async throws {
        let passphrase = try knownPassphrase()
        var configuration = AppConfiguration(
            profile: try ProfileStorage(directory: profile.directory), profileName: profile.profile,
            passphrase: passphrase, port: port, defaultServer: server, allowInsecureHTTP: insecureHttp)
        configuration.vaultIdleLock = lockVaultAfter == 0 ? nil : .seconds(lockVaultAfter * 60)
        let app = try await AppServer(configuration: configuration)
        let url: URL
        do {
            url = try await app.start()
        } catch {
            await app.shutdown()
            throw error
        }
        // Unbuffered: a script (or a test) reads the link while the app runs.
        FileHandle.standardOutput.write(Data("open \(url.absoluteString)\n".utf8))
        if !noOpen { openBrowser(url) }
        let signal = await TerminationSignal.next()
        await app.shutdown()
        FileHandle.standardError.write(Data("received \(signal), closed the app\n".utf8))
    }

    /// The passphrase from a file or the environment; nil lets the page ask.
    private func knownPassphrase() throws -> String? {
        if let passphraseFile {
            let line = try FileIO.firstLine(of: passphraseFile)
            guard !line.isEmpty else { throw CLIError.emptyPassphrase }
            return line
        }
        let fromEnvironment = ProcessInfo.processInfo.environment[PassphraseOptions.environmentVariable]
        return fromEnvironment?.isEmpty == false ? fromEnvironment : nil
    }

    /// xdg-open when there is a display; otherwise the printed link is the way in.
    private func openBrowser(_ url: URL) {
        let environment = ProcessInfo.processInfo.environment
        guard environment["DISPLAY"] != nil || environment["WAYLAND_DISPLAY"] != nil else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["xdg-open", url.absoluteString]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try? process.run()
    }
}

/// Waits for SIGINT or SIGTERM without letting them kill the process, so the app closes its
/// connection and store cleanly.
enum TerminationSignal {
    static func next() async -> String {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let sources = [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")].map { number, name in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(name) }
            source.resume()
            return source
        }
        defer { for source in sources { source.cancel() } }
        for await name in stream { return name }
        return "end"
    }
}
