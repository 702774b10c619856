import Foundation
import OpenAPIRuntime

extension HTTPBody {
    /// The bytes of an open file as a streamed body, read in `chunkSize` pieces on a task of its
    /// own (never the whole file in memory); the handle is closed when the body ends or is dropped.
    public static func streaming(_ handle: FileHandle, length: Int64, chunkSize: Int = 64 * 1024) -> HTTPBody {
        let chunks = AsyncThrowingStream<ArraySlice<UInt8>, any Error> { continuation in
            let reader = Task {
                defer { try? handle.close() }
                do {
                    while !Task.isCancelled, let data = try handle.read(upToCount: chunkSize), !data.isEmpty {
                        continuation.yield(ArraySlice(data))
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in reader.cancel() }
        }
        return HTTPBody(chunks, length: .known(length), iterationBehavior: .single)
    }
}
