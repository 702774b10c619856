import ArgumentParser
import CipherLab
import Foundation

extension KeystreamAlgorithm: ExpressibleByArgument {}

struct AnalyzeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "analyze",
        abstract: "Run NIST SP 800-22 and structural tests on keystreams and write a report with charts.",
        discussion: """
            Runs the battery on each algorithm (default: all three, so the controls are always there), \
            then writes report.md and SVG charts into the report directory. Keys are derived from --seed, \
            so a report can be reproduced exactly.
            """
    )

    @Option(name: .long, help: "sblock, aes-ctr or chacha20; repeat for several (default: all).")
    var algorithm: [KeystreamAlgorithm] = []

    @Option(name: .long, help: "Analyse one fixed key (UTF-8) instead of --keys derived keys.")
    var key: String?

    @Option(name: .long, help: "Keystream bytes per key for the NIST battery.")
    var bytes: Int = 131_072

    @Option(name: .long, help: "Number of keys (sequences) per algorithm.")
    var keys: Int = 80

    @Option(name: .long, help: "Keys for the initial-byte bias experiment.")
    var biasKeys: Int = 65_536

    @Option(name: .long, help: "Seed for deriving keys.")
    var seed: String = "confidant-cipher-lab"

    @Option(name: .long, help: "Directory for report.md and the charts.")
    var report: String

    func validate() throws {
        guard bytes >= 16, bytes <= 64 << 20 else { throw ValidationError("--bytes must be between 16 and 67108864") }
        guard keys >= 1, keys <= 10_000 else { throw ValidationError("--keys must be between 1 and 10000") }
        guard biasKeys >= 256 else { throw ValidationError("--bias-keys must be at least 256") }
        if let key, key.isEmpty { throw ValidationError("--key must not be empty") }
    }

    func run() async throws {
        var configuration = LabConfiguration()
        configuration.algorithms = algorithm.isEmpty ? KeystreamAlgorithm.allCases : algorithm
        configuration.bytesPerKey = bytes
        configuration.keys = key == nil ? keys : 1
        configuration.fixedKey = key.map { Array($0.utf8) }
        configuration.biasKeys = biasKeys
        configuration.seed = seed
        let progress = ProgressLine()
        var analyses: [AlgorithmAnalysis] = []
        for algorithm in configuration.algorithms {
            analyses.append(try AlgorithmAnalysis.run(algorithm, configuration: configuration) { progress.update($0) })
        }
        progress.finish()
        let command = (["confidant"] + CommandLine.arguments.dropFirst()).joined(separator: " ")
        let url = try LabReport(configuration: configuration, analyses: analyses, command: command)
            .write(to: URL(fileURLWithPath: report))
        print("report: \(url.path)")
        for analysis in analyses {
            let verdicts = NISTTest.allCases.compactMap { analysis.battery.verdict(for: $0) }
            let passing = verdicts.filter(\.passes).count
            print(
                "\(analysis.algorithm.displayName.padding(toLength: 20, withPad: " ", startingAt: 0)) "
                    + "\(passing)/\(verdicts.count) NIST tests pass, \(String(format: "%.1f", analysis.seconds)) s")
        }
    }
}
