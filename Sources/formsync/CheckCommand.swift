import FormSpec
import FormSyncCommandLine
import Foundation

/// `formsync check PATH...`: every problem of every spec, sorted, in the compiler's format.
enum CheckCommand {
    static let help = """
        usage: formsync check PATH... [--format text|json|github]

        Checks each spec file, or each *.yaml file in each folder (and, with formspecs.lock
        beside them, the released shapes), and reports every problem: as
        path:line:column: error: message (or warning:) on standard error, as one JSON document
        on standard output (json), or as GitHub Actions annotations (github). Exit status: 0
        when there are no errors, 1 when any spec has errors, 2 for a usage mistake (a missing
        path, a folder without specs, an unknown option).
        """

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, options: ["--format"], flags: ["--help", "-h"])
        if args.flags.contains("--help") || args.flags.contains("-h") {
            print(help)
            return 0
        }
        let format = try DiagnosticOutput.from(args)
        let files = try SpecInput.files(args.positionals)
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
        let errors = diagnostics.filter { $0.severity == .error }.count
        let warnings = diagnostics.count - errors
        return format.emit(
            diagnostics,
            summary:
                "\(files.count) spec\(files.count == 1 ? "" : "s") checked: \(errors) error\(errors == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s")"
        )
    }
}
