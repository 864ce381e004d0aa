import ArgumentParser
import HTTPAPI

/// The `berth` command line: thin commands over the libraries.
@main
struct Berth: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "berth",
        abstract: "Berth: a self-hosted purchase backend for App Store in-app purchases.",
        version: BuildInfo.description,
        subcommands: [
            ServeCommand.self, MigrateCommand.self, KeysCommand.self, BackupCommand.self, CopyDatabaseCommand.self, VerifyCommand.self,
            TestKitCommand.self, InventoryCommand.self,
        ]
    )
}
