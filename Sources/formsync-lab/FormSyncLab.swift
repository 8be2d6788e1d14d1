import FormSyncCommandLine
import FormSyncSQLite
import Foundation

/// `formsync-lab`: the benchmarks and the torture harnesses. Not a product: it links the test
/// doubles and the harnesses, which no app should carry. Exit status as `formsync`'s.
@main
enum FormSyncLab {
    static let commands: [(name: String, summary: String, run: @Sendable ([String]) async throws -> Int32)] = [
        ("bench", "Measure throughput against a same-run baseline (see BENCHMARKS.md)", BenchCommand.run),
        ("torture", "Prove it: thousands of SIGKILLs of a real device, seeded fault schedules", TortureCommand.run),
    ]

    /// One line per command, the summaries in one column whatever the longest name.
    static var commandList: String {
        let width = commands.map(\.name.count).max() ?? 0
        return commands.map { "  " + $0.name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.summary }.joined(
            separator: "\n")
    }

    static var help: String {
        """
        usage: formsync-lab COMMAND [ARGUMENTS]   (formsync-lab COMMAND --help for each command)

        The lab: what measures and proves FormSync, not what apps run (that is `formsync`).

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
        guard let command = commands.first(where: { $0.name == name }) else {
            printError("formsync-lab: unknown command '\(name)'\n\n\(help)")
            exit(2)
        }
        do {
            exit(try await command.run(Array(arguments.dropFirst())))
        } catch let error as UsageError {
            printError("formsync-lab \(name): \(error.message) (see formsync-lab \(name) --help)")
            exit(2)
        } catch {
            printError("formsync-lab \(name): \(error)")
            exit(1)
        }
    }
}
