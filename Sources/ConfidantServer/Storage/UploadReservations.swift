import ConfidantAPI
import Foundation
import Synchronization

/// The uploads under way on this instance: the bytes each has yet to write (what it declared,
/// less what it wrote), so that parallel uploads together cannot take the disk below the floor
/// (each is checked against the free space less everyone else's outstanding bytes), and how many
/// each account runs at once.
final class UploadReservations: Sendable {
    /// Uploads one account may run at once on an instance.
    static let maximumPerAccount = 4

    private struct Upload {
        let owner: UUID
        var outstanding: Int64
    }

    private struct State {
        var uploads: [UUID: Upload] = [:]
        var perOwner: [UUID: Int] = [:]
    }

    private let state = Mutex(State())

    /// Starts an upload of `declared` bytes (nil: not said) for `owner`, if the account has room
    /// for another at once and the disk for its bytes beside everyone else's outstanding ones.
    func begin(_ id: UUID, owner: UUID, declared: Int64?, space: DiskSpace) throws(APIFailure) {
        let available = space.available()
        let outcome = state.withLock { state -> APIFailure? in
            if state.perOwner[owner, default: 0] >= Self.maximumPerAccount {
                return APIFailure(
                    .rateLimited,
                    "This account already has \(Self.maximumPerAccount) uploads under way; wait for one to finish.",
                    retryAfter: 5)
            }
            if let available {
                let others = state.uploads.values.reduce(Int64(0)) { $0 + $1.outstanding }
                let free = available - others
                if free - (declared ?? 0) < space.floor { return DiskSpace.low(max(0, free)) }
            }
            state.uploads[id] = Upload(owner: owner, outstanding: declared ?? 0)
            state.perOwner[owner, default: 0] += 1
            return nil
        }
        if let outcome { throw outcome }
    }

    /// The upload wrote `bytes` more: checks the disk again (the free space now, less the
    /// others' outstanding bytes and this one's own, must stay above the floor).
    func wrote(_ id: UUID, bytes: Int64, space: DiskSpace) throws(APIFailure) {
        let available = space.available()
        let outcome = state.withLock { state -> APIFailure? in
            guard var upload = state.uploads[id] else { return nil }
            upload.outstanding = max(0, upload.outstanding - bytes)
            state.uploads[id] = upload
            guard let available else { return nil }
            let outstanding = state.uploads.values.reduce(Int64(0)) { $0 + $1.outstanding }
            return available - outstanding < space.floor ? DiskSpace.low(max(0, available - outstanding)) : nil
        }
        if let outcome { throw outcome }
    }

    /// The upload ended, stored or not.
    func end(_ id: UUID) {
        state.withLock { state in
            guard let upload = state.uploads.removeValue(forKey: id) else { return }
            state.perOwner[upload.owner, default: 1] -= 1
            if state.perOwner[upload.owner] == 0 { state.perOwner[upload.owner] = nil }
        }
    }

    /// Uploads under way, for the diagnostics and the tests.
    var count: Int { state.withLock { $0.uploads.count } }
}
