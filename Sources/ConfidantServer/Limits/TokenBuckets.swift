import Foundation
import Synchronization

/// In-memory token buckets per key (an account sending messages): cheap enough for the send
/// path, at the cost of counting per server instance rather than across instances.
final class TokenBuckets: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    let setting: TokenBucketSetting
    private let now: @Sendable () -> Date
    private let buckets = Mutex<[UUID: Bucket]>([:])
    /// Buckets kept at most; full ones are dropped first (they equal a fresh bucket).
    static let capacity = 100_000

    init(setting: TokenBucketSetting, now: @escaping @Sendable () -> Date) {
        self.setting = setting
        self.now = now
    }

    /// Takes `count` tokens for `key`; otherwise throws `rate_limited` with the seconds until
    /// there are enough.
    func take(_ count: Double = 1, for key: UUID, what: String) throws(APIFailure) {
        let now = now()
        let setting = setting
        let wait: Double? = buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: setting.burst, updated: now)
            bucket.tokens = min(
                setting.burst, bucket.tokens + max(0, now.timeIntervalSince(bucket.updated)) * setting.perSecond)
            bucket.updated = now
            guard bucket.tokens >= count else {
                buckets[key] = bucket
                return (count - bucket.tokens) / max(setting.perSecond, 0.001)
            }
            bucket.tokens -= count
            buckets[key] = bucket
            if buckets.count > Self.capacity {
                buckets = buckets.filter { $0.value.tokens < setting.burst }
            }
            return nil
        }
        if let wait {
            let seconds = max(1, Int(wait.rounded(.up)))
            throw APIFailure(.rateLimited, "Too many \(what); try again in \(seconds) seconds.", retryAfter: seconds)
        }
    }
}
