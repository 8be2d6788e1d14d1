import Foundation

/// A tool's commands and how one runs: the help that lists them, the exit status of a usage
/// mistake (2) and of any other failure (1), the same for `formsync` and `formsync-lab`.
package struct CommandTable: Sendable {
    package typealias Run = @Sendable ([String]) async throws -> Int32

    package struct Command: Sendable {
        package var name: String
        package var summary: String
        package var run: Run
        /// Started by the tool itself (a demo's device): not listed in the help.
        package var hidden: Bool

        package init(_ name: String, _ summary: String, hidden: Bool = false, _ run: @escaping Run) {
            self.name = name
            self.summary = summary
            self.hidden = hidden
            self.run = run
        }
    }

    /// The tool's name, as its messages start.
    package var tool: String
    package var commands: [Command]

    package init(tool: String, _ commands: [Command]) {
        self.tool = tool
        self.commands = commands
    }

    /// One line per listed command, the summaries in one column whatever the longest name.
    package var list: String {
        let listed = commands.filter { !$0.hidden }
        let width = listed.map(\.name.count).max() ?? 0
        return listed.map { "  " + $0.name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.summary }.joined(separator: "\n")
    }

    /// Runs the command `arguments` names and exits with its status; `help` when none or an
    /// unknown one is named.
    package func run(_ arguments: [String], help: String) async -> Never {
        guard let name = arguments.first else {
            printError(help)
            exit(2)
        }
        if ["--help", "-h", "help"].contains(name) {
            print(help)
            exit(0)
        }
        guard let command = commands.first(where: { $0.name == name }) else {
            printError("\(tool): unknown command '\(name)'\n\n\(help)")
            exit(2)
        }
        do {
            exit(try await command.run(Array(arguments.dropFirst())))
        } catch let error as UsageError {
            printError("\(tool) \(name): \(error.message) (see \(tool) \(name) --help)")
            exit(2)
        } catch {
            printError("\(tool) \(name): \(error)")
            exit(1)
        }
    }
}
