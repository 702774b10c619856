import ConfidantKit
import Foundation
import Testing

@Suite("Profile pictures")
struct AvatarTests {
    @Test("PNG and JPEG by their signatures; anything else, and oversized pictures, refused with the reason")
    func signatures() throws {
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0])
        #expect(try Avatar(png).contentType == "image/png")
        #expect(try Avatar(Data([0xFF, 0xD8, 0xFF, 0xE0])).contentType == "image/jpeg")
        #expect(throws: ConfidantKitError.invalidAvatar("it is not a PNG or JPEG image")) {
            try Avatar(Data("<svg onload=alert(1)>".utf8))
        }
        #expect(throws: ConfidantKitError.invalidAvatar("it is not a PNG or JPEG image")) { try Avatar(Data()) }
        let large = png + Data(count: Avatar.maximumBytes)
        #expect(
            throws: ConfidantKitError.invalidAvatar("it is \(large.count) bytes; the limit is \(Avatar.maximumBytes)")
        ) {
            try Avatar(large)
        }
    }
}
