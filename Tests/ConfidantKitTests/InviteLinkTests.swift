import Foundation
import Testing

@testable import ConfidantKit

@Suite("Invite links")
struct InviteLinkTests {
    @Test("a link gives its server and code; anything else is no link")
    func parsing() throws {
        let link = try #require(InviteLink(" https://relay.example:8443/chat/join?code=K7QM-2XPA-9D3F-T8RW-B5NE \n"))
        #expect(link.server == "https://relay.example:8443/chat" && link.code == "K7QM-2XPA-9D3F-T8RW-B5NE")
        #expect(InviteLink("http://127.0.0.1:8080/join?code=abc&x=1")?.server == "http://127.0.0.1:8080")
        for text in [
            "https://relay.example/join", "https://relay.example/join?code=", "https://relay.example/joint?code=A",
            "ftp://relay.example/join?code=A", "https:///join?code=A", "K7QM-2XPA-9D3F-T8RW-B5NE",
            "https://relay.example/join?code=%3Cscript%3E",
            "https://relay.example/join?code=" + String(repeating: "A", count: 65),
            "https://relay.example/join?code=A#frag" + String(repeating: "x", count: 2_100),
        ] {
            #expect(InviteLink(text) == nil, "\(text.prefix(60))")
        }
    }
}
