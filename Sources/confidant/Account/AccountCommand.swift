import ArgumentParser

/// `confidant account …`: the profile's account on its server.
struct AccountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account", abstract: "Create an account, sign in and out, show the account and its devices.",
        subcommands: [
            RegisterCommand.self, LoginCommand.self, LogoutCommand.self, WhoAmICommand.self, DevicesCommand.self,
            SeedCompatibilityCommand.self, ReadReceiptsCommand.self, AvatarCommand.self, NameCommand.self,
        ])
}
