import ArgumentParser
import ConfidantCrypto
import ConfidantVault
import Foundation

struct VaultAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add a memory: text, files (photos, videos, anything), or both.")

    @OptionGroup var options: VaultOptions
    @Option(name: .long, help: "The chapter's title.") var chapter: String
    @Option(name: .long, help: "The memory's text.") var text: String?
    @Option(name: .long, help: "A file to add (repeatable).") var file: [String] = []

    func validate() throws {
        guard text != nil || !file.isEmpty else { throw ValidationError("give --text, --file, or both") }
    }

    func run() async throws {
        let vault = try options.open()
        let urls = file.map { URL(fileURLWithPath: $0) }
        for url in urls where !FileManager.default.isReadableFile(atPath: url.path) {
            throw CLIError.unreadable(path: url.path, reason: "no such file or no permission")
        }
        // Sizes are read once: progress comes after every 64 KiB segment, and a stat per update
        // was eight system calls each (130,000 for a 1 GiB file, by strace).
        let sizes = Dictionary(
            urls.map { url in
                (
                    url.lastPathComponent,
                    (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
                )
            }, uniquingKeysWith: max)
        var bars: [String: ProgressBar] = [:]
        let item = try vault.addItem(chapter: chapter, text: text, files: urls) { name, done in
            let bar = bars[name] ?? ProgressBar(label: "encrypting \(name)", total: sizes[name] ?? 0)
            bars[name] = bar
            bar.update(done)
        }
        for bar in bars.values { bar.finish() }
        print(
            "added \(item.shortID) to \"\(item.chapterTitle)\""
                + (item.media.isEmpty ? "" : " with \(item.media.count) file(s)"))
    }
}

struct VaultListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List memories, oldest first.")

    @OptionGroup var options: VaultOptions
    @Option(name: .long, help: "Only this chapter.") var chapter: String?
    @Flag(name: .long, help: "Machine-readable output.") var json = false

    func run() async throws {
        let items = try options.open().items(chapter: chapter)
        if json {
            let rows = items.map { item -> [String: Any] in
                [
                    "id": item.id.canonicalString, "chapter": item.chapterTitle,
                    "timestamp": ISO8601DateFormatter().string(from: item.timestamp),
                    "text": item.text ?? NSNull(),
                    "files": item.media.map { ["name": $0.name, "contentType": $0.contentType, "size": $0.size] },
                ]
            }
            let data = try JSONSerialization.data(withJSONObject: rows, options: [.prettyPrinted, .sortedKeys])
            print(String(decoding: data, as: UTF8.self))
            return
        }
        if items.isEmpty { print("no memories yet") }
        for item in items {
            let summary = (item.text ?? "").replacingOccurrences(of: "\n", with: " ")
            let files = item.media.isEmpty ? "" : "  [\(item.media.count) file(s)]"
            print("\(item.shortID)  \(item.dateText)  \(item.chapterTitle)  \(summary.prefix(60))\(files)")
        }
    }
}

struct VaultShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one memory.")

    @OptionGroup var options: VaultOptions
    @Argument(help: "The item's id (the first digits are enough).") var item: String

    func run() async throws {
        let item = try options.open().item(item)
        print("id:       \(item.id.canonicalString)")
        print("chapter:  \(item.chapterTitle)")
        print("time:     \(item.dateText)")
        if let text = item.text { print("text:\n\(text)") }
        for media in item.media { print("file:     \(media.name)  \(media.contentType)  \(byteCount(media.size))") }
    }
}

struct VaultExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Decrypt one memory (or --all) into a directory.")

    @OptionGroup var options: VaultOptions
    @Flag(name: .long, help: "Export every memory, one folder per chapter and item.") var all = false
    @Argument(help: "ITEM DIR, or DIR with --all.") var arguments: [String]

    func validate() throws {
        guard arguments.count == (all ? 1 : 2) else {
            throw ValidationError(all ? "usage: export --all DIR" : "usage: export ITEM DIR")
        }
    }

    func run() async throws {
        let vault = try options.open()
        let destination = URL(fileURLWithPath: arguments[arguments.count - 1])
        var bar: ProgressBar?
        let progress: (Vault.FileProgress) -> Void = { file in
            if file.done == 0 {
                bar?.finish()
                bar = ProgressBar(label: "decrypting \(file.name)", total: file.total)
            }
            bar?.update(file.done)
        }
        let files =
            all
            ? try vault.exportAll(to: destination, progress: progress)
            : try vault.export(arguments[0], to: destination, progress: progress)
        bar?.finish()
        print("exported \(files.count) file(s) to \(destination.path)")
    }
}

struct VaultRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove a memory and its files.")

    @OptionGroup var options: VaultOptions
    @Argument(help: "The item's id.") var item: String

    func run() async throws {
        try options.open().removeItem(item)
        print("removed \(item)")
    }
}

struct VaultEditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit", abstract: "Change a memory's text or date (its files stay).")

    @OptionGroup var options: VaultOptions
    @Argument(help: "The item's id (the first digits are enough).") var item: String
    @Option(name: .long, help: "The new text.") var text: String?
    @Flag(name: .long, help: "Remove the text (a memory with files only).") var clearText = false
    @Option(name: .long, help: "The new date: YYYY-MM-DD or YYYY-MM-DDTHH:MM (local time).") var date: String?

    func validate() throws {
        guard text != nil || clearText || date != nil else {
            throw ValidationError("give --text, --clear-text or --date")
        }
        if text != nil, clearText { throw ValidationError("--text and --clear-text exclude each other") }
        if let date, Self.parse(date) == nil {
            throw ValidationError("--date takes YYYY-MM-DD or YYYY-MM-DDTHH:MM, e.g. 2024-06-01 or 2024-06-01T18:30")
        }
    }

    static func parse(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        for format in ["yyyy-MM-dd'T'HH:mm", "yyyy-MM-dd"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    func run() async throws {
        let newText: String?? = clearText ? .some(nil) : text.map { .some($0) }
        let edited = try options.open().editItem(item, text: newText, timestamp: date.flatMap(Self.parse))
        print("edited \(edited.shortID): \(edited.dateText)")
    }
}
