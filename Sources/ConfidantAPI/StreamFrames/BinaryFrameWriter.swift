import Foundation

/// Writes a binary stream frame's fields one after another into a buffer sized for them
/// (`StreamDeliveryFrame`, `StreamReceiptFrame`), rather than appending field by field to `Data`.
struct BinaryFrameWriter {
    let buffer: UnsafeMutableRawBufferPointer
    var offset = 0

    mutating func write<T: FixedWidthInteger>(_ value: T) {
        buffer.storeBytes(of: value.bigEndian, toByteOffset: offset, as: T.self)
        offset += MemoryLayout<T>.size
    }

    mutating func write(_ id: UUID) {
        withUnsafeBytes(of: id.uuid) {
            UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<offset + 16]).copyMemory(from: $0)
        }
        offset += 16
    }

    mutating func write(_ data: Data) {
        data.withUnsafeBytes {
            UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<offset + data.count]).copyMemory(from: $0)
        }
        offset += data.count
    }
}
