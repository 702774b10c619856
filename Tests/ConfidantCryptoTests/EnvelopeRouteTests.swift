import Foundation
import PropertyBased
import Testing

@testable import ConfidantCrypto

/// `EnvelopeRoute` reads an envelope's header in place, v1 or v2: it must take exactly the bytes
/// the full parse (`WireEnvelope`) takes, read the same fields, and refuse the rest with the same
/// error.
@Suite struct EnvelopeRouteTests {
    /// The route and the full parse agree on `bytes`: both read the same fields, or both throw
    /// the same error.
    static func expectAgreement(
        _ bytes: Data, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let full = Result { () throws(EnvelopeError) in try WireEnvelope(serialized: bytes) }
        let route = Result { () throws(EnvelopeError) in try EnvelopeRoute(serialized: bytes) }
        switch (full, route) {
        case (.success(let envelope), .success(let route)):
            #expect(route.sender == envelope.sender, comment, sourceLocation: sourceLocation)
            #expect(route.recipient == envelope.recipient, comment, sourceLocation: sourceLocation)
            #expect(route.messageID == envelope.messageID, comment, sourceLocation: sourceLocation)
        case (.failure(let fullError), .failure(let routeError)):
            #expect(routeError == fullError, comment, sourceLocation: sourceLocation)
        default:
            Issue.record(
                "the route and the full parse disagree: \(full) against \(route)", sourceLocation: sourceLocation)
        }
    }

    /// An envelope's bytes and where its length fields are: (offset, width in bytes, value).
    struct Sample {
        let bytes: Data
        let lengths: [(offset: Int, width: Int, value: Int)]
    }

    /// A session's first envelope (with its start) and a later one (without).
    static func ratchetEnvelopes() throws -> (first: RatchetEnvelope, later: RatchetEnvelope) {
        var alice = try SessionParty()
        var bob = try SessionParty()
        let first = try alice.seal("hello", to: bob)
        _ = try bob.open(first, from: alice)
        let reply = try bob.seal("hi", to: alice)
        _ = try alice.open(reply, from: bob)
        let later = try alice.seal(String(repeating: "x", count: 300), to: bob)
        #expect(first.start != nil)
        #expect(later.start == nil)
        return (first, later)
    }

    /// v1 envelopes: signed and not, and one of every suite.
    static func sealedEnvelopes() throws -> [SealedEnvelope] {
        let alice = try PrivateIdentity.generate()
        let bob = try PrivateIdentity.generate()
        return try EnvelopeSuite.allCases.flatMap { suite in
            try [false, true].map { signed in
                try SealedEnvelope.seal(
                    Array("hello".utf8), from: alice, senderUserID: UUID(), to: bob.publicIdentity,
                    recipientUserID: UUID(), suite: suite, signed: signed)
            }
        }
    }

    static func samples() throws -> [Sample] {
        let (first, later) = try ratchetEnvelopes()
        let ratchet = [first, later].map { envelope in
            let bytes = envelope.serialized
            return Sample(
                bytes: bytes, lengths: [(bytes.count - envelope.ciphertext.count - 4, 4, envelope.ciphertext.count)])
        }
        let sealed = try sealedEnvelopes().map { envelope in
            let key = envelope.encapsulatedKey.count
            return Sample(
                bytes: envelope.serialized,
                lengths: [
                    (EnvelopeHeader.byteCount, 2, key),
                    (EnvelopeHeader.byteCount + 2 + key, 4, envelope.ciphertext.count),
                ])
        }
        return ratchet + sealed
    }

    @Test func readsTheHeaderOfEitherVersion() throws {
        let (first, later) = try Self.ratchetEnvelopes()
        for envelope in [first, later] {
            let route = try EnvelopeRoute(serialized: envelope.serialized)
            #expect(route.sender == envelope.sender)
            #expect(route.recipient == envelope.recipient)
            #expect(route.messageID == envelope.messageID)
        }
        for sealed in try Self.sealedEnvelopes() {
            let route = try EnvelopeRoute(serialized: sealed.serialized)
            #expect(route.sender == sealed.header.sender)
            #expect(route.recipient == sealed.header.recipient)
            #expect(route.messageID == sealed.header.messageID)
        }
        // Each is read in place, not by the full parse the in-place read falls back to.
        for sample in try Self.samples() {
            #expect(sample.bytes.withUnsafeBytes { EnvelopeRoute.route(in: $0) } != nil)
        }
    }

    /// v1 keys of other lengths, the bytes around them consistent: any length is a key to the
    /// parse, but a seed-legacy envelope carries none.
    @Test func sealedKeysOfAnyLength() throws {
        for envelope in try Self.sealedEnvelopes() {
            let header = envelope.serialized.prefix(EnvelopeHeader.byteCount)
            let rest = envelope.serialized.dropFirst(EnvelopeHeader.byteCount + 2 + envelope.encapsulatedKey.count)
            for count in [0, 1, 32, 1_120] {
                let bytes = header + [UInt8(count >> 8), UInt8(count & 0xFF)] + Data(repeating: 9, count: count) + rest
                Self.expectAgreement(bytes, "\(envelope.header.suite) with a key of \(count) bytes")
                let inPlace = bytes.withUnsafeBytes { EnvelopeRoute.route(in: $0) } != nil
                #expect(inPlace == (envelope.header.suite != .seedLegacy || count == 0))
            }
        }
    }

    /// Each byte and length the in-place read checks, changed every way that matters.
    @Test func refusesWhatTheFullParseRefuses() throws {
        for sample in try Self.samples() {
            let bytes = sample.bytes
            // Cut at every length, and one byte too many.
            for length in 0...bytes.count { Self.expectAgreement(bytes.prefix(length), "cut at \(length)") }
            Self.expectAgreement(bytes + [0], "a byte after the envelope")
            // Every value of the version, suite and flags bytes (a v1 signature flag or a v2 start
            // flag set or cleared moves what follows).
            for position in 0..<3 {
                for value in 0...UInt8.max {
                    var changed = bytes
                    changed[changed.startIndex + position] = value
                    Self.expectAgreement(changed, "byte \(position) set to \(value)")
                }
            }
            // Each length: none, around a tag's, off by one either way, as long as it can be.
            for (offset, width, value) in sample.lengths {
                for length in [0, 1, 15, 16, 17, value - 1, value + 1, width == 2 ? Int(UInt16.max) : Int(UInt32.max)] {
                    guard length >= 0 else { continue }
                    var changed = bytes
                    let field = (0..<width).map { UInt8(truncatingIfNeeded: length >> (8 * (width - 1 - $0))) }
                    changed.replaceSubrange(offset..<offset + width, with: field)
                    Self.expectAgreement(changed, "length at \(offset) set to \(length)")
                }
            }
        }
        // v2 ciphertexts of consistent lengths around a tag's (16 bytes, the shortest the full
        // parse takes), and none.
        let later = try Self.ratchetEnvelopes().later
        let prefix = later.serialized.prefix(later.serialized.count - later.ciphertext.count - 4)
        for count in [0, 1, 15, 16, 17] {
            var bytes = prefix
            withUnsafeBytes(of: UInt32(count).bigEndian) { bytes.append(contentsOf: $0) }
            bytes.append(Data(repeating: 7, count: count))
            Self.expectAgreement(bytes, "a ciphertext of \(count) bytes")
            if count >= 16 { #expect(throws: Never.self) { try EnvelopeRoute(serialized: bytes) } }
        }
        Self.expectAgreement(Data(), "no bytes")
    }

    @Test func agreesWithTheFullParseOnAlteredEnvelopes() async throws {
        let envelopes = try Self.samples().map(\.bytes)
        await propertyCheck(
            count: 1_000, input: Gen.int(in: 0...(envelopes.count - 1)), Gen.int(in: 0...1_600), Gen.uint8(),
            Gen.int(in: 0...2)
        ) { which, position, value, cut in
            var bytes = envelopes[which]
            let offset = position % bytes.count
            bytes[bytes.startIndex + offset] = value
            // Also cut it short there, or let a byte follow it, a third of the time each.
            if cut == 1 { bytes = bytes.prefix(offset) }
            if cut == 2 { bytes.append(value) }
            Self.expectAgreement(bytes, "byte \(offset) set to \(value), cut \(cut)")
        }
    }
}
