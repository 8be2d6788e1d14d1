import FormSyncCommandLine
import FormSyncSQLite
import Foundation

/// The `formsync` command-line tool. Exit status: 0 ok, 1 problems found, 2 a usage mistake.
@main
enum FormSyncTool {
    typealias Run = @Sendable ([String]) async throws -> Int32

    static let commands: [(name: String, summary: String, run: Run)] = [
        ("check", "Check form specs; print every problem as path:line:column: error: message", CheckCommand.run),
        ("generate", "Generate Swift and JSON Schema from specs (--check compares instead)", GenerateCommand.run),
        ("diff", "What changed between two versions of the specs, and what it means for queued items", DiffCommand.run),
        ("schema", "Print the JSON Schema of the spec language, for editors", SchemaCommand.run),
        ("serve", "Run the reference sync server on loopback", ServeCommand.run),
        ("conformance", "Check a FormSync server against docs/PROTOCOL.md, one rule at a time", ConformanceCommand.run),
        ("outbox", "Look inside a device's outbox database (counts per state, items needing attention)", OutboxCommand.run),
        ("demo", "Simulate a field day against the embedded server and report the invariants", DemoCommand.run),
    ]

    /// This build's version (CHANGELOG.md).
    static let version = "0.12.0"
    /// The wire protocol it speaks (docs/PROTOCOL.md).
    static let protocolVersion = 1

    /// One line per command, the summaries in one column whatever the longest name.
    static var commandList: String {
        let width = commands.map(\.name.count).max() ?? 0
        return commands.map { "  " + $0.name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.summary }.joined(
            separator: "\n")
    }

    static var help: String {
        """
        usage: formsync COMMAND [ARGUMENTS]   (formsync COMMAND --help for each command)
               formsync --version

        Exit status, every command: 0 ok; 1 problems found (spec errors, differences, a failed
        check or invariant); 2 a usage mistake (unknown option, missing or unreadable path,
        nothing to work on). Diagnostics and progress go to standard error, data to standard
        output.

        commands:
        \(commandList)
        """
    }

    static func main() async {
        ParentWatch.exitWithParent()
        // Each line as it is printed, also into a pipe or a log: a long run shows its progress.
        StandardOutput.lineBuffered()
        // Before any SQLite use, the benchmarks' raw baselines included: one setting for all.
        SQLiteConnection.configureProcess()
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let name = arguments.first else {
            printError(help)
            exit(2)
        }
        if ["--help", "-h", "help"].contains(name) {
            print(help)
            exit(0)
        }
        if name == "--version" {
            print("formsync \(version) (wire protocol \(protocolVersion))")
            exit(0)
        }
        if name == "demo-device" {
            // Internal: one device process of `formsync demo`.
            do {
                exit(try await DemoDeviceCommand.run(Array(arguments.dropFirst())))
            } catch let error as UsageError {
                printError("formsync demo-device: \(error.message) (see formsync demo-device --help)")
                exit(2)
            } catch {
                printError("formsync demo-device: \(error)")
                exit(1)
            }
        }
        guard let command = commands.first(where: { $0.name == name }) else {
            printError("formsync: unknown command '\(name)'\n\n\(help)")
            exit(2)
        }
        do {
            exit(try await command.run(Array(arguments.dropFirst())))
        } catch let error as UsageError {
            printError("formsync \(name): \(error.message) (see formsync \(name) --help)")
            exit(2)
        } catch {
            printError("formsync \(name): \(error)")
            exit(1)
        }
    }
}
