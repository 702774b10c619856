/// How strong the arithmetic method is, measured by simulation rather than asserted: an onlooker
/// who sees challenge/answer pairs narrows the 256 possible mappings until one is left.
public enum ArithmeticAnalysis {
    public struct Result: Sendable {
        public let operands: Int
        /// Mean and 90th percentile of observed pairs needed to pin the mapping down.
        public let meanObservations: Double
        public let p90Observations: Int
        /// Share of trials where `maximumObservations` pairs were not enough.
        public let unresolvedShare: Double
        /// Chance that the best blind guess of the answer (no observations) is right, per attempt.
        public let blindGuessProbability: Double
    }

    public static func simulate<R: RandomNumberGenerator>(
        operands: Int, trials: Int, maximumObservations: Int = 40, using generator: inout R
    ) throws -> Result {
        let all = ArithmeticMapping.all
        var needed: [Int] = []
        var unresolved = 0
        var guessTotal = 0.0
        for _ in 0..<trials {
            let secret = all[Int.random(in: 0..<all.count, using: &generator)]
            var candidates = all
            var observations = 0
            // The best blind guess for one fresh challenge: the answer most mappings give.
            let probe = try ArithmeticChallenge.generate(operands: operands, mapping: secret, using: &generator)
            var counts: [Int: Int] = [:]
            for mapping in all { if let answer = probe.answer(under: mapping) { counts[answer, default: 0] += 1 } }
            guessTotal += Double(counts.values.max() ?? 0) / Double(all.count)
            while candidates.count > 1, observations < maximumObservations {
                let challenge = try ArithmeticChallenge.generate(operands: operands, mapping: secret, using: &generator)
                let answer = challenge.answer(under: secret)
                candidates = candidates.filter { $0.answer(for: challenge) == answer }
                observations += 1
            }
            if candidates.count > 1 { unresolved += 1 } else { needed.append(observations) }
        }
        needed.sort()
        return Result(
            operands: operands,
            meanObservations: needed.isEmpty ? 0 : Double(needed.reduce(0, +)) / Double(needed.count),
            p90Observations: needed.isEmpty ? 0 : needed[min(needed.count - 1, needed.count * 9 / 10)],
            unresolvedShare: Double(unresolved) / Double(trials),
            blindGuessProbability: guessTotal / Double(trials))
    }
}

extension ArithmeticMapping {
    fileprivate func answer(for challenge: ArithmeticChallenge) -> Int? { challenge.answer(under: self) }
}
