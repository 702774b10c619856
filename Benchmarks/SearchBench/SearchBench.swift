import ConfidantCrypto
import ConfidantKit
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `search-bench [MESSAGES] [ROUNDS]` (Benchmarks/search.sh): writes an offline profile of
/// MESSAGES messages (default 100,000) in 100 conversations, their words drawn from a
/// 5,000-word vocabulary with Zipf frequencies as chat text has them, and times
/// `Messenger.search` for queries of every kind — the most common word, a middling one, a rare
/// one, two words, a prefix, a word no message has — ROUNDS times each (default 20): medians of
/// wall and CPU time. The reference, in the same run: the same query answered without the index,
/// by reading and opening every message of every conversation (`Messenger.history`) and checking
/// its words, as a client without an index must.
@main
enum SearchBench {
    static func main() async throws {
        let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
        let messages = arguments.first ?? 100_000
        let rounds = arguments.dropFirst().first ?? 20
        guard messages >= 100, rounds >= 1 else {
            FileHandle.standardError.write(Data("usage: search-bench [MESSAGES ≥ 100] [ROUNDS ≥ 1]\n".utf8))
            exit(2)
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("search-bench-\(UUID())")
        // SEARCH_BENCH_KEEP=1 keeps the profile (its path is printed) to look into the store.
        let keep = ProcessInfo.processInfo.environment["SEARCH_BENCH_KEEP"] == "1"
        defer {
            if keep { print("kept \(directory.path)") } else { try? FileManager.default.removeItem(at: directory) }
        }
        let profile = ProfileStorage(directory: directory, keyParameters: try ScryptParameters(log2N: 10, r: 8, p: 1))
        guard let server = URL(string: "http://127.0.0.1:9") else { exit(2) }
        var vocabulary = Vocabulary(seed: 42)
        let conversations = 100
        let written = try ContinuousClock().measure {
            _ = try SyntheticProfile.write(
                profile, passphrase: "benchmark", server: server, conversations: conversations,
                messagesPerConversation: messages / conversations, longChat: 0,
                text: { _, _ in vocabulary.message() })
        }
        let messenger = try Messenger.open(profile, passphrase: "benchmark")
        let size = (try? FileManager.default.attributesOfItem(atPath: profile.storeURL.path)[.size] as? Int) ?? 0
        print(
            "\(messages) messages written and indexed in \(format(written)) (store \(size / 1_048_576) MiB); \(rounds) rounds"
        )
        let peers = try await messenger.conversations().map { $0.id }
        let queries = [
            ("most common word", vocabulary.words[0]), ("middling word", vocabulary.words[200]),
            ("rare word", vocabulary.words[4_000]), ("two words", "\(vocabulary.words[3]) \(vocabulary.words[40])"),
            ("prefix", String(vocabulary.words[60].prefix(4))), ("no match", "zzzzzz"),
        ]
        print("query                 hits   median wall   median CPU   no index (wall)   ratio")
        for (name, query) in queries {
            var walls: [Duration] = []
            var cpus: [Duration] = []
            var hits = 0
            _ = try await messenger.search(query, limit: 50)
            for _ in 0..<rounds {
                let cpu = cpuTime()
                let wall = try await ContinuousClock().measure {
                    hits = try await messenger.search(query, limit: 50).count
                }
                walls.append(wall)
                cpus.append(cpuTime() - cpu)
            }
            let words = SearchTerms.words(query)
            let reference = try await ContinuousClock().measure {
                var found = 0
                for peer in peers {
                    for message in try await messenger.history(with: peer, limit: messages)
                    where matches(words, message.text ?? "") {
                        found += 1
                    }
                }
                precondition(found >= hits, "the index found more than a full scan")
            }
            let median = walls.sorted()[walls.count / 2]
            print(
                name.padding(toLength: 20, withPad: " ", startingAt: 0) + String(format: "%6d", hits) + "   "
                    + format(median).leftPadded(11) + "   " + format(cpus.sorted()[cpus.count / 2]).leftPadded(10)
                    + "   " + format(reference).leftPadded(15) + "   "
                    + String(format: "%.0f×", reference / median))
        }
    }

    /// The reference's check: every query word begins a word of the text (as the index matches).
    static func matches(_ query: [String], _ text: String) -> Bool {
        let words = SearchTerms.words(text)
        return query.allSatisfy { word in words.contains { $0.hasPrefix(word) } }
    }

    static func cpuTime() -> Duration {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let user = Duration.seconds(usage.ru_utime.tv_sec) + .microseconds(usage.ru_utime.tv_usec)
        let system = Duration.seconds(usage.ru_stime.tv_sec) + .microseconds(usage.ru_stime.tv_usec)
        return user + system
    }

    static func format(_ duration: Duration) -> String {
        let milliseconds = Double(duration.components.seconds) * 1_000 + Double(duration.components.attoseconds) / 1e15
        return milliseconds >= 1_000
            ? String(format: "%.1f s", milliseconds / 1_000) : String(format: "%.2f ms", milliseconds)
    }
}

/// Made-up words (syllables) with Zipf frequencies, from a fixed seed: the same corpus every run.
struct Vocabulary {
    private(set) var words: [String] = []
    private var cumulative: [Double] = []
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
        let syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "ba", "do", "fu", "gi", "ha", "ju"]
        var seen = Set<String>()
        while words.count < 5_000 {
            let count = 2 + Int(next() % 3)
            let word = (0..<count).map { _ in syllables[Int(next() % UInt64(syllables.count))] }.joined()
            if seen.insert(word).inserted { words.append(word) }
        }
        var total = 0.0
        cumulative = words.indices.map { rank in
            total += 1 / Double(rank + 1)
            return total
        }
    }

    /// SplitMix64.
    private mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// 4 to 16 words.
    mutating func message() -> String {
        let count = 4 + Int(next() % 13)
        let total = cumulative[cumulative.count - 1]
        return (0..<count).map { _ in
            let target = Double(next() % 1_000_000) / 1_000_000 * total
            var low = 0
            var high = cumulative.count - 1
            while low < high {
                let middle = (low + high) / 2
                if cumulative[middle] < target { low = middle + 1 } else { high = middle }
            }
            return words[low]
        }.joined(separator: " ")
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
