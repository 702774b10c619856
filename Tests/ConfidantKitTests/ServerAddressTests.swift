import Foundation
import Testing

@testable import ConfidantKit

@Suite("Server addresses")
struct ServerAddressTests {
    @Test("https anywhere; plain http only to this machine unless allowed; anything else is no address")
    func rules() throws {
        #expect(try ServerAddress.parse("https://relay.example").absoluteString == "https://relay.example")
        #expect(try ServerAddress.parse("https://relay.example:8443/").absoluteString == "https://relay.example:8443")
        for loopback in ["http://127.0.0.1:8080", "http://localhost:8080", "http://[::1]:8080", "http://127.3.4.5"] {
            #expect(throws: Never.self) { try ServerAddress.parse(loopback) }
        }
        for remote in ["http://relay.example", "http://10.0.0.7:8080", "http://127.0.0.1.evil.example", "http://[::2]"]
        {
            #expect(throws: ConfidantKitError.insecureServerURL(remote)) { try ServerAddress.parse(remote) }
            #expect(throws: Never.self) { try ServerAddress.parse(remote, allowInsecureHTTP: true) }
        }
        for bad in [
            "relay.example", "ftp://relay.example", "https://relay.example/v1", "https://relay.example?x=1", "",
        ] {
            #expect(throws: ConfidantKitError.invalidServerURL(bad)) { try ServerAddress.parse(bad) }
        }
    }
}
