import ArgumentParser

/// `confidant cipher …`: the cipher lab.
struct CipherCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cipher",
        abstract: "Raw encryption, and the lab: measure the seed's S-block cipher and attack its use.",
        subcommands: [CipherEncryptCommand.self, CipherDecryptCommand.self, AnalyzeCommand.self, AttackCommand.self]
    )
}

struct AttackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attack",
        abstract: "Attacks on the seed's use of its cipher.",
        subcommands: [ReuseAttackCommand.self]
    )
}
