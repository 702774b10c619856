import ConfidantKit
import Foundation

/// Indexes the messages stored before the search index existed, in the background and once at a
/// time; searches meanwhile find what is indexed. A failure leaves them for the next search page.
@MainActor
final class SearchIndexing {
    private var running: Task<Void, Never>?

    func start(_ messenger: Messenger) {
        guard running == nil else { return }
        running = Task { @MainActor in
            try? await messenger.indexEarlierMessagesForSearch()
            running = nil
        }
    }
}
