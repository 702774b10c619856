#if canImport(Glibc)
    import Glibc
#endif

/// Streaming work (the vault, attachments) allocates and frees a 64 KiB block per segment: AES-GCM
/// returns each segment as a new buffer. glibc gives the top of its heap back to the kernel once
/// 128 KiB are free there, so the next segment faults its pages in again — a measured 16,000 to
/// 37,000 page faults per GiB exported, against 3,300 when freed memory stays in the heap. The
/// process keeps up to 256 MiB it freed (only while it runs).
enum MemoryTuning {
    /// Raises glibc's trim and mmap thresholds; does nothing on other C libraries.
    static func keepFreedBlocks() {
        #if canImport(Glibc)
            // mallopt is declared in malloc.h, which Swift's Glibc module does not import.
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
            let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
            _ = mallopt(-1, 256 << 20)  // M_TRIM_THRESHOLD
            _ = mallopt(-2, 16 << 20)  // M_TOP_PAD
            _ = mallopt(-3, 32 << 20)  // M_MMAP_THRESHOLD
        #endif
    }
}
