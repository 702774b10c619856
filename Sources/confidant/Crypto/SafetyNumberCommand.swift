import ArgumentParser
import ConfidantCrypto

struct SafetyNumberCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "safety-number",
        abstract: "Print the 60-digit safety number of two public identities; both people see the same digits."
    )

    @Argument(help: "Your public identity PEM file.")
    var mine: String

    @Argument(help: "Their public identity PEM file.")
    var theirs: String

    func run() async throws {
        let number = SafetyNumber(try IdentityFiles.loadPublic(mine), try IdentityFiles.loadPublic(theirs))
        print(number.grouped)
    }
}
