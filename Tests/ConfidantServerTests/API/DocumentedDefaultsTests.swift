import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantServer

/// docs/OPERATIONS.md and docs/SECURITY.md state the shipped limits: each sentence below is built
/// from the value in `ServerConfiguration`, so changing a default without its documents fails here.
@Suite("The documents state the shipped defaults")
struct DocumentedDefaultsTests {
    @Test("every default a document names is the one in the code")
    func documentsStateTheDefaults() throws {
        let shipped = ServerConfiguration.embedded()
        let security = try String(contentsOf: Repository.file("docs/SECURITY.md"), encoding: .utf8)
        let operations = try String(contentsOf: Repository.file("docs/OPERATIONS.md"), encoding: .utf8)
        func days(_ seconds: TimeInterval) -> Int { Int(seconds / 86_400) }
        func minutes(_ seconds: TimeInterval) -> Int { Int(seconds / 60) }
        let claims: [(document: String, text: String, phrase: String)] = [
            ("SECURITY.md", security, "share \(shipped.storageQuotaBytes >> 30) GiB per account"),
            ("SECURITY.md", security, "mailbox holds at most \(Self.grouped(shipped.mailboxLimit))"),
            ("SECURITY.md", security, "entries older than \(days(shipped.mailboxRetention)) days are purged"),
            (
                "SECURITY.md", security,
                "token bucket of \(Self.grouped(Int(shipped.sendRate.burst))) with \(Int(shipped.sendRate.perSecond)) a second"
            ),
            ("SECURITY.md", security, "limited to \(shipped.prekeyClaims.limit) an hour"),
            (
                "SECURITY.md", security,
                "per account (\(shipped.signInStarts.perAccount.limit) in \(minutes(shipped.signInStarts.perAccount.window)) minutes"
            ),
            (
                "SECURITY.md", security,
                "per network address (\(shipped.signInStarts.perAddress.limit) in \(minutes(shipped.signInStarts.perAddress.window)) minutes)"
            ),
            (
                "SECURITY.md", security,
                "must arrive within \(shipped.requestBodySeconds) s of its headers, and an\n  upload must average \(shipped.minimumUploadBytesPerSecond >> 10) KiB/s"
            ),
            ("OPERATIONS.md", operations, "sessions live \(days(shipped.sessionLifetime)) days"),
            ("OPERATIONS.md", operations, "bcrypt cost \(shipped.passwordCost)"),
            ("OPERATIONS.md", operations, "envelopes ≤ \(shipped.maximumEnvelopeBytes >> 10) KiB"),
            ("OPERATIONS.md", operations, "JSON bodies ≤ \(shipped.maximumJSONBodyBytes >> 20) MiB"),
            ("OPERATIONS.md", operations, "avatars ≤ \(shipped.maximumAvatarBytes >> 20) MiB"),
            ("OPERATIONS.md", operations, "blobs ≤ \(shipped.maximumBlobBytes >> 20) MiB"),
            ("OPERATIONS.md", operations, "sign-ups: \(shipped.freeSignUpsPerAddress) per address"),
            (
                "OPERATIONS.md", operations,
                "lock for \(Int(shipped.signInPolicy.lockoutSeconds / 60)) minutes after \(shipped.signInPolicy.lockoutThreshold)"
            ),
            (
                "OPERATIONS.md", operations,
                "frees up within \(shipped.databaseWaitSeconds) s\n(`ServerConfiguration.databaseWaitSeconds`)"
            ),
            (
                "OPERATIONS.md", operations,
                "within \(shipped.postgresConnectSeconds) s (`ServerConfiguration.postgresConnectSeconds`)"
            ),
            ("OPERATIONS.md", operations, "is given up after \(shipped.postgresWriteSeconds) s\n"),
            ("OPERATIONS.md", operations, "| `--min-free-mib` | `\(shipped.minimumFreeBytes >> 20)` |"),
            ("OPERATIONS.md", operations, "| `--max-attachment-mib` | `\(shipped.maximumBlobBytes >> 20)` |"),
            (
                "OPERATIONS.md", operations,
                "| `--attachment-retention-days` | `\(days(shipped.attachmentRetention))` |"
            ),
        ]
        for claim in claims {
            #expect(claim.text.contains(claim.phrase), "docs/\(claim.document) should say “\(claim.phrase)”")
        }
    }

    /// `100000` as the documents write it: `100,000`.
    static func grouped(_ value: Int) -> String {
        let digits = Array(String(value))
        var text = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index).isMultiple(of: 3) { text.append(",") }
            text.append(digit)
        }
        return text
    }
}
