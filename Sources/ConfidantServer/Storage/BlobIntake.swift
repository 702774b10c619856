import ConfidantAPI
import ConfidantCrypto
import Crypto
import Foundation
import OpenAPIRuntime

/// The limits every upload meets, whichever store keeps its bytes: at most `limit` bytes (413),
/// at most `UploadReservations.maximumPerAccount` uploads of one account at once on an instance,
/// at least `pace` (408), and, where the store writes to a local disk, the free-space floor
/// counting every upload under way (checked at the start and every `recheckBytes`).
struct BlobIntake: Sendable {
    /// The uploads under way, shared by every upload of this instance.
    let reservations = UploadReservations()
    /// How fast an upload's bytes must come.
    let pace: UploadPace
    /// What must stay free on the disk the store writes to; a probe that says nothing for a store
    /// that is not on a local disk.
    let space: DiskSpace

    /// How often an upload checks the disk again as it writes.
    static let recheckBytes: Int64 = 8 << 20

    /// Reads `body` for a new blob `id` of `owner`, handing each piece to `write` as it comes;
    /// returns its size and SHA-256.
    func receive(
        _ body: HTTPBody, limit: Int64, what: String, owner: UUID, id: UUID,
        into write: @escaping @Sendable (ArraySlice<UInt8>) async throws -> Void
    ) async throws -> (size: Int64, sha256: String) {
        var declared: Int64?
        if case .known(let length) = body.length {
            if length > limit { throw APIFailure.tooLarge(what, limit: Int(limit)) }
            declared = length
        }
        try reservations.begin(id, owner: owner, declared: declared, space: space)
        defer { reservations.end(id) }
        return try await pace.enforce { [self] progress in
            var hasher = SHA256()
            var size: Int64 = 0
            var checkedAt: Int64 = 0
            for try await chunk in body {
                size += Int64(chunk.count)
                progress.add(chunk.count)
                guard size <= limit else { throw APIFailure.tooLarge(what, limit: Int(limit)) }
                hasher.update(data: chunk)
                if size - checkedAt >= Self.recheckBytes {
                    try reservations.wrote(id, bytes: size - checkedAt, space: space)
                    checkedAt = size
                }
                try await write(chunk)
            }
            return (size, hasher.finalize().hexString)
        }
    }

    /// What a store answers when it cannot keep the bytes (a full disk, a failed write).
    static func unavailable(_ error: any Error) -> APIFailure {
        APIFailure(
            .storageUnavailable, "The server could not store that (\(error.localizedDescription)); retry later.",
            retryAfter: 60)
    }
}
