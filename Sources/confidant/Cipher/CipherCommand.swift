import ArgumentParser

/// `confidant cipher …`: the cipher lab.
struct CipherCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cipher",
        abstract: "Measure the seed's S-block cipher against AES-CTR and ChaCha20, and attack its use.",
        subcommands: [AnalyzeCommand.self, AttackCommand.self]
    )
}

struct AttackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attack",
        abstract: "Attacks on the seed's use of its cipher.",
        subcommands: [ReuseAttackCommand.self]
    )
}
