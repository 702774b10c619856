import ConfidantCrypto
import ConfidantKit
import ConfidantVault
import Foundation

/// The vault page as its template reads it, built from the vault's state as `VaultViewModel`
/// holds it: create or unlock when locked, the timeline when open, and a backup under way.
struct VaultPageModel: Encodable, Sendable {
    struct File: Encodable, Sendable {
        let id: String
        let name: String
        let isImage: Bool
        let isVideo: Bool
        let isOther: Bool
        let media: String
        let photo: String

        init(_ file: MediaFile) {
            id = file.id.canonicalString
            name = file.name
            isImage = file.contentType.hasPrefix("image/")
            isVideo = file.contentType.hasPrefix("video/")
            isOther = !isImage && !isVideo
            media = AppRoute.vaultMedia(.value(file.id)).path
            photo = AppRoute.vaultPhoto(.value(file.id)).path
        }
    }

    struct Item: Encodable, Sendable {
        let id: String
        let date: String
        let isoDate: String
        let text: String?
        let files: [File]
        let edit: String
        let delete: String
    }

    struct Section: Encodable, Sendable {
        let title: String
        let items: [Item]
    }

    let page: PageInfo
    let exists: Bool
    let unlocked: Bool
    let sections: [Section]
    let noChapters: Bool
    /// The new memory's form: the latest chapter and today, or what was typed when adding failed.
    var lastChapter: String
    var today: String
    var typedText = ""
    /// "15 minutes": how long without use before the vault locks by itself; nil when it does not.
    var idleLock: String?
    let maxUpload: String
    let transfer: VaultTransferView?
    let backupDirectory: String

    init(
        page: PageInfo, exists: Bool, unlocked: Bool, timeline: [VaultViewModel.ChapterSection],
        transfer: VaultTransfer?,
        maxUploadBytes: Int, backupDirectory: String, now: Date = Date()
    ) {
        self.page = page
        self.exists = exists
        self.unlocked = unlocked
        sections = timeline.map { section in
            Section(
                title: section.chapter.title,
                items: section.items.map { item in
                    Item(
                        id: item.id.canonicalString, date: item.timestamp.formatted(date: .long, time: .omitted),
                        isoDate: item.timestamp.formatted(.iso8601), text: item.text, files: item.media.map(File.init),
                        edit: AppRoute.editMemory(.value(item.id)).path,
                        delete: AppRoute.deleteMemory(.value(item.id)).path)
                })
        }
        noChapters = sections.isEmpty
        lastChapter = sections.first?.title ?? ""
        today = now.formatted(.iso8601.year().month().day())
        maxUpload = ByteCountFormatter.string(fromByteCount: Int64(maxUploadBytes), countStyle: .file)
        self.transfer = VaultTransferView(transfer)
        self.backupDirectory = backupDirectory
    }
}

/// A backup or restore as the vault page shows it.
struct VaultTransferView: Encodable, Sendable {
    let running: Bool
    let heading: String
    /// Objects done and in all, for a progress bar, once known.
    let done: Int?
    let total: Int?
    let percent: Int?
    let message: String?
    let failed: Bool

    init?(_ transfer: VaultTransfer?) {
        guard let transfer else { return nil }
        let backup = transfer.kind == .backup
        switch transfer.outcome {
        case .running:
            self.init(
                running: true, heading: "\(backup ? "Backing up to" : "Restoring from") \(transfer.target)…",
                done: transfer.progress?.object, total: transfer.progress?.objects,
                percent: transfer.progress.map { Int(($0.fraction * 100).rounded()) }, message: nil, failed: false)
        case .finished(let report):
            self.init(
                running: false, heading: backup ? "Backup finished" : "Restore finished", done: nil, total: nil,
                percent: nil, message: report, failed: false)
        case .failed(let reason):
            self.init(
                running: false, heading: backup ? "Backup failed" : "Restore failed", done: nil, total: nil,
                percent: nil, message: reason, failed: true)
        }
    }

    private init(
        running: Bool, heading: String, done: Int?, total: Int?, percent: Int?, message: String?, failed: Bool
    ) {
        self.running = running
        self.heading = heading
        self.done = done
        self.total = total
        self.percent = percent
        self.message = message
        self.failed = failed
    }
}
