import Foundation

#if canImport(Darwin)
    import Darwin
#endif

/// Which run of the operating system this process is in. A write SQLite committed without
/// syncing survives a crash of the process, and is lost only with the system's own run (a
/// power cut, a crash of the kernel): a row written in this run holds its latest writes, one
/// written in an earlier run may not. Sessions use it to go on past what they reserved after a
/// loss (`StoreTransaction`, docs/PROTOCOL.md §9.6).
enum SystemBoot {
    /// The system's id for this boot; nil where the platform gives none (then every sealing is
    /// synced before its envelope leaves, as if nothing were reserved).
    static let current: String? = {
        #if os(Linux)
            // A random UUID the kernel makes at each boot.
            guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else {
                return nil
            }
            let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
            return UUID(uuidString: id) == nil ? nil : id.lowercased()
        #elseif canImport(Darwin)
            // The same on Apple platforms: a UUID made at each boot.
            var size = 0
            guard sysctlbyname("kern.bootsessionuuid", nil, &size, nil, 0) == 0, size > 1, size <= 64 else {
                return nil
            }
            var bytes = [CChar](repeating: 0, count: size)
            guard sysctlbyname("kern.bootsessionuuid", &bytes, &size, nil, 0) == 0 else { return nil }
            let id = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return UUID(uuidString: id) == nil ? nil : id.lowercased()
        #else
            return nil
        #endif
    }()
}
