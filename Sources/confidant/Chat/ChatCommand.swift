import ArgumentParser

/// `confidant chat …`: conversations. `confidant chat EMAIL` opens one.
struct ChatCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat",
        abstract:
            "Chat: open a conversation (the default), send, inbox, history, search, mark-unread, users, verify, edit, delete, react, timer, attachments.",
        subcommands: [
            ChatOpenCommand.self, SendCommand.self, InboxCommand.self, HistoryCommand.self, SearchCommand.self,
            MarkUnreadCommand.self,
            UsersCommand.self,
            VerifyCommand.self, EditCommand.self, DeleteCommand.self, ReactCommand.self, TimerCommand.self,
            AttachmentCommand.self,
        ],
        defaultSubcommand: ChatOpenCommand.self)
}
