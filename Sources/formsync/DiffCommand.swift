import FormSpec
import FormSyncCommandLine
import Foundation

/// `formsync diff OLD NEW` or `formsync diff --lock [LOCK] SPECS`: what changed between two
/// versions of a folder of specs, and what each change means for items queued on devices.
enum DiffCommand {
    static let help = """
        usage: formsync diff OLD NEW [--format text|json|github]
               formsync diff --lock [LOCK] SPECS [--format text|json|github]

        Compares each spec in NEW with the spec of the same name in OLD (folders or files), or,
        with --lock, the specs in SPECS with every version released in LOCK (default
        SPECS/formspecs.lock). Every change is reported as path:line:column: error|warning:
          compatible      (warning) old items still fit: an optional field or an option added,
                          a bound widened, a field no longer required
          handled at send (warning) a bound narrowed, a new required field without a default,
                          a conflict policy or authority changed: the outbox parks what no
                          longer fits, for a person to fix, or merges by the new policy
          breaking        (error unless an upgrader covers it) a field removed or renamed, a
                          type changed, an option removed
        A shape change without a version bump, a version that goes down, and a spec that
        disappeared are errors. Diagnostics go to standard error (text), or to standard output
        as JSON or GitHub Actions annotations. Exit status: 0 no errors, 1 errors, 2 usage
        mistake.
        """

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, options: ["--format"], flags: ["--lock", "--help", "-h"])
        if args.flags.contains("--help") || args.flags.contains("-h") {
            print(help)
            return 0
        }
        let format = try DiagnosticOutput.from(args)
        if args.flags.contains("--lock") {
            guard (1...2).contains(args.positionals.count) else { throw UsageError("diff --lock [LOCK] SPECS") }
            let folder = args.positionals.last!
            let lockPath =
                args.positionals.count == 2 ? args.positionals[0] : (folder as NSString).appendingPathComponent(SpecLock.fileName)
            var info = stat()
            guard stat(lockPath, &info) == 0 else { throw UsageError("\(lockPath): \(String(cString: strerror(errno)))") }
            let lock = try SpecLock.read(lockPath)
            let specs = try checked(folder)
            let broken = specs.flatMap(\.spec.diagnostics).filter { $0.severity == .error }
            return report(broken.isEmpty ? SpecDiff.compare(lock: lock, specs: specs) : broken, format)
        }
        guard args.positionals.count == 2 else { throw UsageError("diff OLD NEW (or diff --lock SPECS)") }
        let old = try checked(args.positionals[0])
        let new = try checked(args.positionals[1])
        let broken = (old + new).flatMap(\.spec.diagnostics).filter { $0.severity == .error }
        return report(broken.isEmpty ? SpecDiff.compare(old: old, new: new, oldName: args.positionals[0]) : broken, format)
    }

    static func checked(_ path: String) throws -> [(path: String, spec: CheckedSpec)] {
        SpecLoader.check(filesAt: try SpecInput.files([path]))
    }

    static func report(_ diagnostics: [Diagnostic], _ format: DiagnosticOutput) -> Int32 {
        let errors = diagnostics.filter { $0.severity == .error }.count
        let warnings = diagnostics.count - errors
        return format.emit(diagnostics, summary: "\(errors) error\(errors == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s")")
    }
}
