import Foundation
import Synchronization

/// The texts one observed screen shows, kept from one fetch of it to the next, so that a change to
/// one line of a chat does not open all of them again (AES-GCM and its associated data).
/// A line's text is taken from here only when its sealed body is the same bytes as when it was
/// opened (an edit seals anew). Each fetch keeps only the lines it returned, so the text of a line
/// that was deleted, expired or scrolled out leaves with the first fetch that no longer shows it,
/// and all of it goes with the observation that owns this.
final class OpenedTexts: Sendable {
    fileprivate struct Line {
        let sealed: Data
        let text: String
    }

    private let lines = Mutex<[Int64: Line]>([:])
    /// Lines opened (not taken from here) since this was made, for the tests.
    private let openedCount = Atomic<Int>(0)

    var opened: Int { openedCount.load(ordering: .relaxed) }
    /// The lines whose text is kept, for the tests.
    var keptLines: Set<Int64> { lines.withLock { Set($0.keys) } }

    /// One fetch: `text(_:sealed:open:)` for each line it shows, then `finish()`.
    struct Fetch {
        fileprivate let owner: OpenedTexts
        fileprivate let previous: [Int64: Line]
        fileprivate var kept: [Int64: Line] = [:]

        /// The text of line `sequence`, opened with `open` unless its sealed body is the one opened before.
        mutating func text(_ sequence: Int64, sealed: Data, open: (Data) throws -> String) rethrows -> String {
            if let line = previous[sequence] ?? kept[sequence], line.sealed == sealed {
                kept[sequence] = line
                return line.text
            }
            let text = try open(sealed)
            owner.openedCount.add(1, ordering: .relaxed)
            kept[sequence] = Line(sealed: sealed, text: text)
            return text
        }

        /// Keeps exactly the lines this fetch showed.
        func finish() {
            let kept = kept
            owner.lines.withLock { $0 = kept }
        }
    }

    /// - Parameter partial: the fetch reads only some of the lines shown (those a commit changed)
    ///   and the others stay: their texts are kept as they are. The texts are taken out while the
    ///   fetch runs, so that keeping them copies nothing; a fetch that fails leaves none (they are
    ///   opened again).
    func fetch(partial: Bool = false) -> Fetch {
        let previous = lines.withLock { lines in
            defer { lines = [:] }
            return lines
        }
        return partial
            ? Fetch(owner: self, previous: [:], kept: previous) : Fetch(owner: self, previous: previous)
    }

    /// Keeps the text of a line shown without being opened (its transaction wrote it,
    /// `InsertedLines`), so that reading the line back later does not open it.
    func remember(_ sequence: Int64, sealed: Data, text: String) {
        lines.withLock { $0[sequence] = Line(sealed: sealed, text: text) }
    }

    /// Forgets the texts of lines that scrolled out of a chat.
    func forget(_ sequences: [Int64]) {
        lines.withLock { lines in
            for sequence in sequences { lines[sequence] = nil }
        }
    }
}
