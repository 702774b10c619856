import ConfidantCrypto
import Crypto
import Foundation
import OpenAPIRuntime

/// `size` bytes of a fixed pseudo-random pattern, made piece by piece as a request body asks for
/// them (never all in memory), with their SHA-256 known beforehand.
struct PatternBody: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    let size: Int64
    let block: [UInt8]

    init(size: Int64, pieceBytes: Int = 64 << 10) {
        self.size = size
        var generator = SystemRandomNumberGenerator()
        block = (0..<pieceBytes).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// Piece `index`: the block with its first eight bytes replaced by the index.
    func piece(_ index: Int64) -> ArraySlice<UInt8> {
        var bytes = block
        withUnsafeBytes(of: index.littleEndian) { bytes.replaceSubrange(0..<8, with: $0) }
        let start = index * Int64(block.count)
        return ArraySlice(bytes.prefix(Int(Swift.min(Int64(block.count), size - start))))
    }

    var sha256: String {
        var hasher = SHA256()
        var index: Int64 = 0
        while index * Int64(block.count) < size {
            hasher.update(data: piece(index))
            index += 1
        }
        return hasher.finalize().hexString
    }

    var body: HTTPBody { HTTPBody(self, length: .known(size), iterationBehavior: .single) }

    struct AsyncIterator: AsyncIteratorProtocol {
        let pattern: PatternBody
        var index: Int64 = 0

        mutating func next() async -> ArraySlice<UInt8>? {
            guard index * Int64(pattern.block.count) < pattern.size else { return nil }
            defer { index += 1 }
            return pattern.piece(index)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(pattern: self) }
}

extension HTTPBody {
    /// The SHA-256 and size of everything the body yields, read as it comes.
    func digest() async throws -> (sha256: String, size: Int64) {
        var hasher = SHA256()
        var size: Int64 = 0
        for try await piece in self {
            hasher.update(data: piece)
            size += Int64(piece.count)
        }
        return (hasher.finalize().hexString, size)
    }
}
