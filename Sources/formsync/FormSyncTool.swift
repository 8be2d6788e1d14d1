import FormSyncCommandLine
import FormSyncSQLite
import Foundation

/// The `formsync` command-line tool. Exit status: 0 ok, 1 problems found, 2 a usage mistake.
@main
enum FormSyncTool {
    static let commands = CommandTable(
        tool: "formsync",
        [
            .init("check", "Check form specs; print every problem as path:line:column: error: message", CheckCommand.run),
            .init("generate", "Generate Swift and JSON Schema from specs (--check compares instead)", GenerateCommand.run),
            .init("diff", "What changed between two versions of the specs, and what it means for queued items", DiffCommand.run),
            .init("schema", "Print the JSON Schema of the spec language, for editors", SchemaCommand.run),
            .init("openapi", "Write the wire protocol and the forms' endpoints as an OpenAPI 3.1 description", OpenAPICommand.run),
            .init("preview", "Serve a live preview of the forms for their authors, reloaded as the specs change", PreviewCommand.run),
            .init("serve", "Run the reference sync server on loopback", ServeCommand.run),
            .init("devices", "Enrol, list and revoke a workspace's devices (the back office's token)", DevicesCommand.run),
            .init("export", "A workspace's submissions as CSV and NDJSON, resumable (the back office's token)", ExportCommand.run),
            .init("conformance", "Check a FormSync server against docs/PROTOCOL.md, one rule at a time", ConformanceCommand.run),
            .init("outbox", "Look inside a device's outbox database (counts per state, items needing attention)", OutboxCommand.run),
            .init("demo", "Simulate a field day against the embedded server and report the invariants", DemoCommand.run),
            // Internal: one device process of `formsync demo`.
            .init("demo-device", "One device of formsync demo", hidden: true, DemoDeviceCommand.run),
        ])

    /// This build's version (CHANGELOG.md).
    static let version = "0.13.0"
    /// The wire protocol it speaks (docs/PROTOCOL.md).
    static let protocolVersion = 1

    static var help: String {
        """
        usage: formsync COMMAND [ARGUMENTS]   (formsync COMMAND --help for each command)
               formsync --version

        Exit status, every command: 0 ok; 1 problems found (spec errors, differences, a failed
        check or invariant); 2 a usage mistake (unknown option, missing or unreadable path,
        nothing to work on). Diagnostics and progress go to standard error, data to standard
        output.

        commands:
        \(commands.list)
        """
    }

    static func main() async {
        ParentWatch.exitWithParent()
        // Each line as it is printed, also into a pipe or a log: a long run shows its progress.
        StandardOutput.lineBuffered()
        // Before any SQLite use, the benchmarks' raw baselines included: one setting for all.
        SQLiteConnection.configureProcess()
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "--version" {
            print("formsync \(version) (wire protocol \(protocolVersion))")
            exit(0)
        }
        await commands.run(arguments, help: help)
    }
}
