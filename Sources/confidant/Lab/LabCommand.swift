import ArgumentParser

/// `confidant lab …` (also `confidant cipher …`): the cipher lab.
struct LabCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lab",
        abstract: "The cipher lab: raw encryption, measure the seed's S-block cipher, attack its use.",
        subcommands: [CipherEncryptCommand.self, CipherDecryptCommand.self, AnalyzeCommand.self, AttackCommand.self],
        aliases: ["cipher"]
    )
}

struct AttackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attack",
        abstract: "Attacks on the seed's use of its cipher.",
        subcommands: [ReuseAttackCommand.self]
    )
}
