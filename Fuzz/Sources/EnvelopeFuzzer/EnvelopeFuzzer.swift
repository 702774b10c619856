import ConfidantCrypto
import Foundation
import FuzzDriver

@main
struct EnvelopeFuzzer {
    static func main() {
        runLibFuzzer(fuzz)
    }
}

/// Every parser of outside bytes in ConfidantCrypto must return or throw a typed error for any
/// input — never trap. The first input byte picks the parser.
func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: start, count: count))
    guard let selector = bytes.first else { return 0 }
    let body = Array(bytes.dropFirst())
    switch selector % 11 {
    case 0:
        if let envelope = try? SealedEnvelope(serialized: body) {
            // Whatever parses must serialize back to the same bytes.
            precondition(Array(envelope.serialized) == body, "envelope re-serialization differs")
        }
    case 6:
        let envelope = try? WireEnvelope(serialized: body)
        if case .ratchet(let ratchet) = envelope {
            precondition(Array(ratchet.serialized) == body, "v2 envelope re-serialization differs")
        }
        // The relay's in-place read of the header takes exactly what the full parse takes.
        let route = try? EnvelopeRoute(serialized: Data(body))
        precondition(
            route?.sender == envelope?.sender && route?.recipient == envelope?.recipient
                && route?.messageID == envelope?.messageID, "the envelope's route differs from its full parse")
    case 7:
        // Stored session state is sealed locally, but its parser must still never trap.
        if let record = try? SessionRecord(serialized: body) {
            // Sessions of format version 1 are still read, and written back as version 2: what
            // parses reaches the current form in one step and stays there, and a record whose
            // sessions are all current re-serializes to its own bytes.
            let again = Array(record.serialized)
            precondition(
                (try? SessionRecord(serialized: again)).map { Array($0.serialized) } == again,
                "a re-serialized session record does not read back to itself")
            if sessionsAreCurrent(body) {
                precondition(again == body, "session record re-serialization differs")
            }
        }
    case 8:
        _ = try? DevicePrekeys(serialized: body)
    case 9:
        // A group message from any member device: it parses back to itself or not at all.
        if let message = try? SenderKeyMessage(serialized: body) {
            precondition(Array(message.serialized) == body, "group message re-serialization differs")
        }
    case 10:
        // Sender key distributions arrive over pairwise sessions; stored chains are sealed, but
        // their parsers must not trap either.
        if let distribution = try? SenderKeyDistribution(serialized: body) {
            precondition(Array(distribution.serialized) == body, "distribution re-serialization differs")
        }
        if let chain = try? SenderKeyReceivingChain(serialized: body) {
            precondition(Array(chain.serialized) == body, "receiving chain re-serialization differs")
        }
        _ = try? SenderKeySendingChain(serialized: body)
    case 1:
        _ = try? PublicIdentity(serialized: body)
    case 2:
        _ = try? PublicIdentity(pemRepresentation: String(decoding: body, as: UTF8.self))
    case 3:
        _ = try? SeedKeyString.p256PublicKey(String(decoding: body, as: UTF8.self))
        _ = try? SeedKeyString.p256PrivateKey(String(decoding: body, as: UTF8.self))
    case 4:
        // Key files: only the header checks; a valid header would run scrypt, too slow to fuzz.
        if body.count != 206 { _ = try? IdentityKeyFile.open(body, passphrase: "fuzz") }
    default:
        _ = Padme.unpad(body)
        if !body.isEmpty { _ = try? SBlockCipher.process(body.prefix(64), key: body) }
    }
    return 0
}

/// Whether every session in a record that parsed (`u8 version | u8 count | count × (u32 length |
/// session)`) is in the current session format, version 2: its first byte.
func sessionsAreCurrent(_ record: [UInt8]) -> Bool {
    var index = 2
    for _ in 0..<Int(record[1]) {
        let length = record[index..<index + 4].reduce(0) { $0 << 8 | Int($1) }
        guard record[index + 4] == 2 else { return false }
        index += 4 + length
    }
    return true
}
