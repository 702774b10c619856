import ArgumentParser
import CipherLab
import ConfidantCrypto
import Foundation

struct ReuseAttackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reuse",
        abstract: "Keystream reuse: recover a seed-legacy message from another of the same conversation.",
        discussion: """
            Inputs are seed-legacy envelopes (from `confidant keys seal --suite seed-legacy`) or raw \
            S-block ciphertexts. With --known (the plaintext of the first), prints the second exactly. \
            Without it, drags common English and Russian words over c1 XOR c2 and prints readable fragments.
            """
    )

    @Argument(help: "First ciphertext or envelope.")
    var first: String

    @Argument(help: "Second ciphertext or envelope.")
    var second: String

    @Option(name: .long, help: "File holding the first message's plaintext.")
    var known: String?

    @Option(name: .long, help: "An extra crib word to drag (repeatable).")
    var crib: [String] = []

    func run() async throws {
        let c1 = try ciphertext(first)
        let c2 = try ciphertext(second)
        if let known {
            let recovered = KeystreamReuse.recover(known: Array(try FileIO.read(known)), ciphertext: c1, other: c2)
            FileHandle.standardOutput.write(Data(recovered))
            if recovered.count < c2.count {
                Terminal.printError(
                    "note: recovered \(recovered.count) of \(c2.count) bytes (the known plaintext is shorter)")
            }
            return
        }
        let fragments = KeystreamReuse.dragCribs(c1, c2, cribs: crib + KeystreamReuse.defaultCribs)
        if fragments.isEmpty {
            print("no readable fragments found; try --crib with words likely in the messages")
        }
        for fragment in fragments {
            print(
                "offset \(String(fragment.offset).padding(toLength: 5, withPad: " ", startingAt: 0)) "
                    + "crib \"\(fragment.crib)\" → other message reads \"\(fragment.revealed)\"")
        }
    }

    private func ciphertext(_ path: String) throws -> [UInt8] {
        let data = try FileIO.read(path)
        guard let envelope = try? SealedEnvelope(serialized: data) else { return Array(data) }
        guard envelope.header.suite == .seedLegacy else {
            throw CLIError.invalidArgument(
                "\(path) is a \(envelope.header.suite.name) envelope: each envelope has its own key and nonce, "
                    + "so keystream reuse does not apply")
        }
        return Array(envelope.ciphertext)
    }
}
