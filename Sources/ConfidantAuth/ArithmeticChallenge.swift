/// The four signs shown in an arithmetic challenge.
public enum ArithmeticSign: String, Sendable, CaseIterable, Codable {
    case plus = "+"
    case minus = "−"
    case times = "×"
    case divide = "÷"

    /// Also accepts the ASCII spellings `-`, `*`, `x`, `/`.
    public init?(symbol: String) {
        switch symbol {
        case "+": self = .plus
        case "−", "-": self = .minus
        case "×", "*", "x": self = .times
        case "÷", "/", ":": self = .divide
        default: return nil
        }
    }
}

/// What a sign means under a user's secret mapping.
public enum ArithmeticOperation: String, Sendable, CaseIterable, Codable {
    case add, subtract, multiply, divide

    /// `nil` when a division is not exact or divides by zero.
    func apply(_ a: Int, _ b: Int) -> Int? {
        switch self {
        case .add: return a.addingReportingOverflow(b).overflow ? nil : a + b
        case .subtract: return a.subtractingReportingOverflow(b).overflow ? nil : a - b
        case .multiply: return a.multipliedReportingOverflow(by: b).overflow ? nil : a * b
        case .divide: return b != 0 && a % b == 0 ? a / b : nil
        }
    }
}

/// The user's secret: which operation each sign stands for. Any of the 4^4 = 256 maps is allowed,
/// as in the seed (two signs may mean the same operation).
public struct ArithmeticMapping: Sendable, Hashable, Codable {
    public let operations: [ArithmeticSign: ArithmeticOperation]

    public init(_ operations: [ArithmeticSign: ArithmeticOperation]) throws(AuthError) {
        guard Set(operations.keys) == Set(ArithmeticSign.allCases) else {
            throw AuthError.invalidMapping("every one of + − × ÷ needs an operation")
        }
        self.operations = operations
    }

    /// Parses `+=*,-=/,*=+,/=-` (sign = the operation it stands for, written as a sign).
    public init(parsing text: String) throws(AuthError) {
        var operations: [ArithmeticSign: ArithmeticOperation] = [:]
        for pair in text.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0.filter { !$0.isWhitespace }) }
            guard parts.count == 2, let sign = ArithmeticSign(symbol: parts[0]),
                let meaning = ArithmeticSign(symbol: parts[1])
            else {
                throw AuthError.invalidMapping("cannot read \"\(pair)\"; write pairs like +=* separated by commas")
            }
            guard operations[sign] == nil else { throw AuthError.invalidMapping("\(sign.rawValue) is mapped twice") }
            operations[sign] = Self.natural[meaning]
        }
        try self.init(operations)
    }

    /// Every sign meaning itself.
    public static let natural: [ArithmeticSign: ArithmeticOperation] = [
        .plus: .add, .minus: .subtract, .times: .multiply, .divide: .divide,
    ]

    /// All 256 mappings.
    public static var all: [ArithmeticMapping] {
        let ops = ArithmeticOperation.allCases
        return ops.flatMap { a in
            ops.flatMap { b in
                ops.flatMap { c in
                    ops.compactMap { d in
                        try? ArithmeticMapping([.plus: a, .minus: b, .times: c, .divide: d])
                    }
                }
            }
        }
    }

    subscript(sign: ArithmeticSign) -> ArithmeticOperation { operations[sign] ?? .add }
}

/// A challenge: operands and signs, evaluated left to right without precedence under a mapping.
public struct ArithmeticChallenge: Sendable, Hashable, Codable, CustomStringConvertible {
    public let operands: [Int]
    public let signs: [ArithmeticSign]

    /// Intermediate values stay within ±bound, so answers are easy to type and never overflow.
    public static let bound = 1_000_000
    public static let operandCount: ClosedRange<Int> = 2...8

    public init(operands: [Int], signs: [ArithmeticSign]) throws(AuthError) {
        guard Self.operandCount.contains(operands.count), signs.count == operands.count - 1 else {
            throw AuthError.invalidChallenge("a challenge has 2…8 operands and one sign fewer")
        }
        self.operands = operands
        self.signs = signs
    }

    /// Parses a challenge as shown (`34 − 17 × 5 ÷ 6 + 2`; ASCII signs too), e.g. when a client
    /// receives it from the server.
    public init(parsing text: String) throws(AuthError) {
        let tokens = text.split(separator: " ").map(String.init)
        guard tokens.count % 2 == 1 else { throw AuthError.invalidChallenge("expected numbers separated by signs") }
        var operands: [Int] = []
        var signs: [ArithmeticSign] = []
        for (index, token) in tokens.enumerated() {
            if index % 2 == 0 {
                guard let number = Int(token) else { throw AuthError.invalidChallenge("\(token) is not a number") }
                operands.append(number)
            } else {
                guard let sign = ArithmeticSign(symbol: token) else {
                    throw AuthError.invalidChallenge("\(token) is not one of + − × ÷")
                }
                signs.append(sign)
            }
        }
        try self.init(operands: operands, signs: signs)
    }

    /// The answer under `mapping`, left to right without precedence; `nil` if a step is inexact or out of bounds.
    public func answer(under mapping: ArithmeticMapping) -> Int? {
        var value = operands[0]
        for (sign, operand) in zip(signs, operands.dropFirst()) {
            guard let next = mapping[sign].apply(value, operand), abs(next) <= Self.bound else { return nil }
            value = next
        }
        return value
    }

    public var description: String {
        var text = String(operands[0])
        for (sign, operand) in zip(signs, operands.dropFirst()) { text += " \(sign.rawValue) \(operand)" }
        return text
    }

    /// Generates a challenge whose every step is exact and bounded under `mapping`.
    /// Operands are 1…99; a division's operand is chosen among the divisors of the running value.
    public static func generate<R: RandomNumberGenerator>(
        operands count: Int, mapping: ArithmeticMapping, using generator: inout R
    ) throws(AuthError) -> ArithmeticChallenge {
        guard operandCount.contains(count) else { throw AuthError.invalidChallenge("choose 2…8 operands") }
        var operands = [Int.random(in: 1...99, using: &generator)]
        var signs: [ArithmeticSign] = []
        var value = operands[0]
        for _ in 1..<count {
            let sign = ArithmeticSign.allCases.randomElement(using: &generator) ?? .plus
            let operand: Int
            switch mapping[sign] {
            case .divide:
                let divisors = (1...99).filter { value % $0 == 0 }
                operand = divisors.randomElement(using: &generator) ?? 1
            case .multiply:
                let limit = max(1, min(99, bound / max(abs(value), 1)))
                operand = Int.random(in: 1...limit, using: &generator)
            case .add:
                operand = Int.random(in: 1...max(1, min(99, bound - value)), using: &generator)
            case .subtract:
                operand = Int.random(in: 1...max(1, min(99, bound + value)), using: &generator)
            }
            guard let next = mapping[sign].apply(value, operand), abs(next) <= bound else {
                throw AuthError.invalidChallenge("internal: generated an unbounded step")
            }
            value = next
            operands.append(operand)
            signs.append(sign)
        }
        return try ArithmeticChallenge(operands: operands, signs: signs)
    }
}
