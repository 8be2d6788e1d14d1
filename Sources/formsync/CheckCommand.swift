import FormSpec
import Foundation

/// `formsync check PATH...`: every problem of every spec, sorted, in the compiler's format.
enum CheckCommand {
    static let help = """
        usage: formsync check PATH...

        Checks each spec file, or each *.yaml file in each folder, and prints every problem as
        path:line:column: error: message (or warning:). Exit status: 0 when there are no errors,
        1 when any spec has errors, 2 for a usage mistake.
        """

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, flags: ["--help", "-h"])
        if args.flags.contains("--help") || args.flags.contains("-h") {
            print(help)
            return 0
        }
        guard !args.positionals.isEmpty else { throw UsageError("name at least one spec file or folder") }
        let files = SpecLoader.specFiles(in: args.positionals)
        guard !files.isEmpty else { throw UsageError("no *.yaml specs found in \(args.positionals.joined(separator: ", "))") }
        var errors = 0
        var warnings = 0
        let specs = SpecLoader.check(filesAt: files)
        var diagnostics = specs.flatMap(\.spec.diagnostics)
        // With a lock beside the specs: released shapes edited in place, and breaking changes
        // no upgrader covers, are errors here too (formsync diff --lock shows every change).
        let lockPath = GenerateCommand.lockPath(for: args.positionals)
        if !diagnostics.hasErrors, FileManager.default.fileExists(atPath: lockPath) {
            let lock = try SpecLock.read(lockPath)
            diagnostics += lock.updated(with: specs).diagnostics.map(\.diagnostic)
            for (path, spec) in specs { diagnostics += SpecDiff.check(spec, path: path, lock: lock).filter { $0.severity == .error } }
        }
        for diagnostic in diagnostics {
            print(diagnostic)
            if diagnostic.severity == .error { errors += 1 } else { warnings += 1 }
        }
        printError("\(files.count) spec\(files.count == 1 ? "" : "s") checked: \(errors) error\(errors == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s")")
        return errors > 0 ? 1 : 0
    }
}
