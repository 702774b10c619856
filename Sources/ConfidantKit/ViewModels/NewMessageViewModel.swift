import Foundation
import Observation

/// "New message": everyone on the server except yourself, filtered by a search.
@MainActor @Observable
public final class NewMessageViewModel {
    /// A prefix of an e-mail or name; empty lists everyone.
    public var query = ""
    /// The users found, except yourself.
    public private(set) var users: [Contact] = []
    /// Why the list could not be loaded.
    public private(set) var error: String?
    private let messenger: Messenger

    /// The picker for `messenger`'s server.
    public init(messenger: Messenger) {
        self.messenger = messenger
    }

    /// Asks the server's directory for `query`.
    public func load() async {
        do {
            let search = query.trimmingCharacters(in: .whitespaces)
            users = try await messenger.users(search: search.isEmpty ? nil : search)
            error = nil
        } catch {
            self.error = String(describing: error)
        }
    }
}
