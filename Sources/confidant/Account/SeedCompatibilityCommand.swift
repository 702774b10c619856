import ArgumentParser
import ConfidantKit

/// `confidant account seed-compatibility [on|off]`.
struct SeedCompatibilityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed-compatibility",
        abstract: "Open (or refuse) messages in the seed app's insecure cipher; off by default.",
        discussion: """
            Messages sealed with suite seed-legacy have no integrity protection and share one keystream \
            per conversation (docs/SECURITY.md). They are shown as unreadable unless this is on; turn it on \
            only to read what a seed app sends, and off again afterwards. Without an argument, shows the setting.
            """)

    enum Setting: String, ExpressibleByArgument, CaseIterable { case on, off }

    @OptionGroup var options: MessengerOptions
    @Argument(help: "on or off.") var setting: Setting?

    func run() async throws {
        let messenger = try options.open()
        if let setting {
            try await messenger.setSeedCompatibility(setting == .on)
        }
        let enabled = await messenger.account.seedCompatibility
        print("seed compatibility: \(enabled ? "on — seed-legacy messages are opened" : "off")")
    }
}
