import Foundation
import Observation

/// "New message": everyone on the server except yourself, filtered by a search.
@MainActor @Observable
public final class NewMessageViewModel {
    public var query = ""
    public private(set) var users: [Contact] = []
    public private(set) var error: String?
    private let messenger: Messenger

    public init(messenger: Messenger) {
        self.messenger = messenger
    }

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
