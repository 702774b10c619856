import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantKit

@Suite("QR codes")
struct QRCodeTests {
    static let samples: [String] = [
        "hello",
        "otpauth://totp/Confidant:alice%40example.com?secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&issuer=Confidant",
        "12345 67890 12345 67890 12345 67890 12345 67890 12345 67890 12345 67890",
        "Привет, мир! " + String(repeating: "long text that needs a large version ", count: 12),
        String(repeating: "z", count: 2000),
    ]

    @Test("versions, masks and correction levels match an independent encoder (Python qrcode), module for module")
    func matchesPythonQRCode() async throws {
        var codes: [[String: Any]] = []
        for (index, text) in Self.samples.enumerated() {
            for correction in QRCode.ErrorCorrection.allCases {
                // A fixed mask per case so that every mask is exercised; and the chosen one.
                for mask in [index % 8, (index + correction.rawValue + 3) % 8, nil] {
                    guard let code = try? QRCode(text: text, correction: correction, mask: mask) else { continue }
                    codes.append([
                        "text": text, "version": code.version, "mask": code.mask,
                        "correction": "\(correction)",
                        "modules": (0..<code.size).map { y in
                            String((0..<code.size).map { x in code[x: x, y: y] ? "1" : "0" })
                        },
                    ])
                }
            }
        }
        #expect(Set(codes.compactMap { $0["version"] as? Int }).count >= 8, "small and large versions alike")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("qr-\(UUID()).json")
        try JSONSerialization.data(withJSONObject: codes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let output = try await PythonScript.run("qr_check.py", [file.path])
        #expect(output.hasSuffix("\(codes.count) passed, 0 failed"), "\(output)")
    }

    @Test("the smallest version that fits; too much data is an error; renderings have the quiet zone")
    func sizes() throws {
        #expect(try QRCode(text: "hello").version == 1)
        #expect(try QRCode(text: String(repeating: "a", count: 14), correction: .medium).version == 1)
        #expect(try QRCode(text: String(repeating: "a", count: 15), correction: .medium).version == 2)
        #expect(throws: QRCode.EncodingError.tooLong(bytes: 3000)) {
            try QRCode(bytes: Array(repeating: 0x61, count: 3000), correction: .medium)
        }
        let code = try QRCode(text: "hello")
        #expect(code.svg.hasPrefix("<svg") && code.svg.contains("viewBox=\"0 0 29 29\""))
        #expect(code.terminalLines.count == (21 + 4 + 1) / 2)
    }
}
