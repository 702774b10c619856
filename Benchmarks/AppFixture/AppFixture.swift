import ConfidantCrypto
import ConfidantKit
import Foundation

/// Writes a synthetic profile for `Benchmarks/app-render.sh`:
///   app-fixture PROFILE_DIR PASSPHRASE CONVERSATIONS LONG_CHAT
/// Prints the long chat's peer id.
@main
enum AppFixture {
    static func main() throws {
        let arguments = CommandLine.arguments
        guard arguments.count == 5, let conversations = Int(arguments[3]), let longChat = Int(arguments[4]) else {
            FileHandle.standardError.write(
                Data("usage: app-fixture PROFILE_DIR PASSPHRASE CONVERSATIONS LONG_CHAT\n".utf8))
            exit(2)
        }
        let profile = ProfileStorage(
            directory: URL(fileURLWithPath: arguments[1]), keyParameters: try ScryptParameters(log2N: 10, r: 8, p: 1))
        // A port nothing listens on: the app shows the profile offline.
        guard let server = URL(string: "http://127.0.0.1:9") else { exit(2) }
        let peer = try SyntheticProfile.write(
            profile, passphrase: arguments[2], server: server,
            conversations: conversations, messagesPerConversation: 3, longChat: longChat)
        print(peer.uuidString.lowercased())
    }
}
