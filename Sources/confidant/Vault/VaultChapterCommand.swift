import ArgumentParser
import ConfidantVault

struct VaultChapterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chapter", abstract: "Add, list, rename or remove chapters.",
        subcommands: [Add.self, List.self, Rename.self, Remove.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a chapter.")
        @OptionGroup var options: VaultOptions
        @Argument(help: "The chapter's title.") var title: String
        func run() async throws {
            let chapter = try options.open().addChapter(title: title)
            print("added chapter \"\(chapter.title)\"")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List chapters.")
        @OptionGroup var options: VaultOptions
        func run() async throws {
            let chapters = try options.open().chapters()
            if chapters.isEmpty {
                print("no chapters yet; add one with \(options.profile.suggestion("vault chapter add", "TITLE"))")
            }
            let width = max(5, chapters.map(\.title.count).max() ?? 0)
            for chapter in chapters {
                print(
                    chapter.title.padding(toLength: width, withPad: " ", startingAt: 0)
                        + "  \(chapter.itemCount) item(s)")
            }
        }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Rename a chapter.")
        @OptionGroup var options: VaultOptions
        @Argument(help: "Current title.") var chapter: String
        @Argument(help: "New title.") var title: String
        func run() async throws {
            try options.open().renameChapter(chapter, to: title)
            print("renamed \"\(chapter)\" to \"\(title)\"")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove a chapter.")
        @OptionGroup var options: VaultOptions
        @Argument(help: "The chapter's title.") var chapter: String
        @Flag(name: .long, help: "Also remove the chapter's items.") var force = false
        func run() async throws {
            try options.open().removeChapter(chapter, force: force)
            print("removed chapter \"\(chapter)\"")
        }
    }
}
