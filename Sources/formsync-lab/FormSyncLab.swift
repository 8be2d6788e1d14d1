import FormSyncCommandLine
import FormSyncSQLite
import Foundation

/// `formsync-lab`: the benchmarks and the torture harnesses. Not a product: it links the test
/// doubles and the harnesses, which no app should carry. Exit status as `formsync`'s.
@main
enum FormSyncLab {
    static let commands = CommandTable(
        tool: "formsync-lab",
        [
            .init("bench", "Measure throughput against a same-run baseline (see BENCHMARKS.md)", BenchCommand.run),
            .init("torture", "Prove it: thousands of SIGKILLs of a real device, seeded fault schedules", TortureCommand.run),
        ])

    static var help: String {
        """
        usage: formsync-lab COMMAND [ARGUMENTS]   (formsync-lab COMMAND --help for each command)

        The lab: what measures and proves FormSync, not what apps run (that is `formsync`).

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
        await commands.run(Array(CommandLine.arguments.dropFirst()), help: help)
    }
}
