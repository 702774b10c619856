import ConfidantCrypto
import Foundation
import Testing
import Vapor

@testable import ConfidantApp

@Suite("The app's routes: one enum registers them and builds every link")
struct AppRouteTests {
    static let peer = UUID(uuidString: "0F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9") ?? UUID()
    static let message = UUID(uuidString: "01234567-89AB-7DEF-8123-456789ABCDEF") ?? UUID()

    /// Each route with values, and the same route as registered.
    static let routes: [(link: AppRoute, pattern: AppRoute)] = [
        (.home, .home), (.welcome, .welcome), (.chatWith, .chatWith),
        (.chat(.value(peer)), .chat(.key)), (.liveChat(.value(peer)), .liveChat(.key)),
        (.send(.value(peer)), .send(.key)),
        (.retry(.value(peer), message: .value(message)), .retry(.key, message: .key)),
        (.file(.value(peer), message: .value(message), index: .value(3)), .file(.key, message: .key, index: .key)),
        (.editMessage(.value(peer), message: .value(message)), .editMessage(.key, message: .key)),
        (.deleteMessage(.value(peer), message: .value(message)), .deleteMessage(.key, message: .key)),
        (.verifyCode(.value(peer), device: .value(message)), .verifyCode(.key, device: .key)),
        (.editMemory(.value(message)), .editMemory(.key)), (.vaultPhoto(.value(message)), .vaultPhoto(.key)),
        (.avatar(.value(peer)), .avatar(.key)), (.removeDevice(.value(peer)), .removeDevice(.key)),
        (.renameDevice(.value(peer)), .renameDevice(.key)),
        (.groups, .groups), (.createGroup, .createGroup), (.group(.value(peer)), .group(.key)),
        (.groupSend(.value(peer)), .groupSend(.key)), (.groupAdd(.value(peer)), .groupAdd(.key)),
        (.groupLeave(.value(peer)), .groupLeave(.key)), (.groupRemove(.value(peer)), .groupRemove(.key)),
        (.groupTimer(.value(peer)), .groupTimer(.key)),
        (.asset(.value("app.css")), .asset(.key)), (.settingsTOTPCode, .settingsTOTPCode),
        (.favicon, .favicon), (.unverify(.value(peer)), .unverify(.key)), (.settingsReceipts, .settingsReceipts),
        (.welcomeAvatar, .welcomeAvatar),
        (.deleteForMe(.value(peer), message: .value(message)), .deleteForMe(.key, message: .key)),
        (.react(.value(peer), message: .value(message)), .react(.key, message: .key)),
    ]

    @Test("a link has the shape its route is registered under: the same fixed parts, a value for each parameter")
    func linksMatchTheirPatterns() {
        for (link, pattern) in Self.routes {
            let parts = link.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
            let components = pattern.pathComponents
            #expect(parts.count == components.count, "\(link.path)")
            for (part, component) in zip(parts, components) {
                switch component {
                case .constant(let text): #expect(part == text, "\(link.path)")
                case .parameter: #expect(!part.isEmpty && !part.hasPrefix(":"), "\(link.path)")
                default: Issue.record("\(pattern.path) has a component that is neither fixed nor a parameter")
                }
            }
        }
    }

    @Test("paths: ids in canonical (lowercase) form, the QR code's file name, the home page as /")
    func paths() {
        let peer = Self.peer.canonicalString
        #expect(AppRoute.home.path == "/")
        #expect(AppRoute.chat(.value(Self.peer)).path == "/chat/\(peer)")
        #expect(AppRoute.chat(.key).path == "/chat/:peer")
        #expect(AppRoute.chat(.key).pathComponents.map(\.description) == ["chat", ":peer"])
        #expect(
            AppRoute.file(.value(Self.peer), message: .value(Self.message), index: .value(2)).path
                == "/chat/\(peer)/files/\(Self.message.canonicalString)/2")
        #expect(
            AppRoute.verifyCode(.value(Self.peer), device: .value(Self.message)).path
                == "/chat/\(peer)/verify/\(Self.message.canonicalString).svg")
        #expect(AppRoute.asset(.value("app.js")).path == "/assets/app.js")
        #expect(AppRoute.favicon.path == "/favicon.ico")
        #expect(AppRoute.asset(.value("../x y")).path == "/assets/..%2Fx%20y")
    }

    @Test("queries and fragments are encoded, so an e-mail with + & = survives the round trip")
    func queriesAreEncoded() throws {
        let email = "a+b&c=d@example.com"
        let path = AppRoute.chatWith.path(query: ["email": email])
        #expect(path == "/chat/with?email=a%2Bb%26c%3Dd%40example.com")
        let components = try #require(URLComponents(string: "http://127.0.0.1\(path)"))
        #expect(components.queryItems?.first?.value == email)
        #expect(AppRoute.vault.path(fragment: "memory-1") == "/vault#memory-1")
        #expect(AppRoute.welcome.path(query: ["mode": "sign-up"]) == "/welcome?mode=sign-up")
    }
}
