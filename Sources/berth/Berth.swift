import ArgumentParser

/// The `berth` command line: thin commands over the libraries.
@main
struct Berth: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "berth",
        abstract: "Berth: a self-hosted purchase backend for App Store in-app purchases.",
        subcommands: [ServeCommand.self, MigrateCommand.self, KeysCommand.self, BackupCommand.self, CopyDatabaseCommand.self, VerifyCommand.self, TestKitCommand.self]
    )
}
