import ArgumentParser
import ConfidantAuth
import Foundation

/// `confidant auth …`: how the account signs in, and the measurement behind docs/SECURITY.md's
/// analysis of the arithmetic method.
struct AuthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "auth", abstract: "Sign-in methods.",
        subcommands: [AuthSetupCommand.self, AuthShowCommand.self, ArithmeticAnalysisCommand.self])
}

struct ArithmeticAnalysisCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "arithmetic-analysis",
        abstract: "Simulate an onlooker: how many challenge/answer pairs pin the operator mapping down, for N = 2…8.")

    @Option(name: .long, help: "Trials per operand count.") var trials = 2_000
    @Option(name: .long, help: "Random seed, for a reproducible table.") var seed: UInt64 = 2026

    func run() async throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        print(
            "| operands N | pairs to pin the mapping (mean) | 90th percentile | not pinned after 40 | blind guess per attempt |"
        )
        print("|---:|---:|---:|---:|---:|")
        for operands in 2...8 {
            let r = try ArithmeticAnalysis.simulate(operands: operands, trials: trials, using: &generator)
            print(
                "| \(operands) | \(String(format: "%.2f", r.meanObservations)) | \(r.p90Observations) | "
                    + "\(String(format: "%.1f %%", r.unresolvedShare * 100)) | \(String(format: "%.4f (1 in %.0f)", r.blindGuessProbability, 1 / r.blindGuessProbability)) |"
            )
        }
    }
}
