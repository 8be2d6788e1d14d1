import FormSpec
import FormSyncCommandLine
import FormSyncInterpreter
import FormSyncModel
import Foundation

/// `formsync conformance URL`: checks a server against docs/PROTOCOL.md, one rule at a time, with
/// payloads made from the server's own specs. Every check prints pass or FAIL and why, with the
/// section of PROTOCOL.md it enforces.
enum ConformanceCommand {
    static let help = """
        usage: formsync conformance URL (--token T | --refresh-token R) [--specs DIR] [--workspace W] [--timeout SECONDS]
                                        [--max-time SECONDS] [--other-token T] [--back-office-token T]
               formsync conformance --list

        Checks the FormSync server at URL against docs/PROTOCOL.md, with payloads made from the
        specs the server serves: --specs DIR (default ./FormSpecs, FormSync's examples). Each
        check prints pass or FAIL, the section of PROTOCOL.md it enforces, and why it failed;
        a rule the specs or the tokens given do not let it check is printed as "not checked"
        with the reason. --list prints every rule it knows, by section, and the ones no check
        covers. It covers health and tokens, header syntax and limits (with raw sockets over
        http), the idempotency ledger, creates and edits of documents, form versions (newer
        refused, older brought up by the upgraders), server-owned fields, field errors, files,
        resumable uploads and their quota, the change feed and its cursors, forms that edit a
        record, and the access rules (with --other-token, another principal of the workspace,
        and --back-office-token). Each run uses fresh document ids and keys.
        Bounds against a server that misbehaves: each exchange ends after --timeout seconds
        (default 10) and 32 MiB of reply, the whole run after --max-time seconds (default 300),
        and a server that does not answer GET /health stops the run at once with one line.
        Exit status: 0 every check passed, 1 a check failed, 2 a usage mistake.
        """

    /// Every rule, by section, with "not checked" and the reason where no check covers it.
    static func list() -> String {
        var lines: [String] = []
        var section = ""
        for rule in Rules.all {
            if rule.section != section {
                section = rule.section
                lines.append(section)
            }
            lines.append("  " + rule.text + (rule.notChecked.map { "  [not checked: \($0)]" } ?? ""))
        }
        let open = Rules.all.filter { $0.notChecked != nil }.count
        lines.append("\(Rules.all.count) rules; \(Rules.all.count - open) checked, \(open) not checked")
        return lines.joined(separator: "\n")
    }

    static func run(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(
            raw,
            options: [
                "--token", "--refresh-token", "--workspace", "--timeout", "--max-time", "--other-token", "--back-office-token", "--specs",
            ],
            flags: ["--help", "-h", "--list"])
        if args.flags.contains("--help") || args.flags.contains("-h") {
            print(help)
            return 0
        }
        if args.flags.contains("--list") {
            print(list())
            return 0
        }
        guard args.positionals.count == 1, let url = URL(string: args.positionals[0]), let scheme = url.scheme,
            ["http", "https"].contains(scheme),
            url.host != nil
        else { throw UsageError("expected one http(s) URL") }
        guard args.values["--token"] != nil || args.values["--refresh-token"] != nil else {
            throw UsageError("give --token or --refresh-token")
        }
        let folder = args.values["--specs"] ?? "FormSpecs"
        guard FileManager.default.fileExists(atPath: folder) else {
            throw UsageError(
                args.values["--specs"] == nil
                    ? "give --specs DIR: the folder of specs the server serves" : "--specs \(folder): no such folder")
        }
        let files = SpecLoader.specFiles(in: [folder])
        guard !files.isEmpty else { throw UsageError("--specs \(folder): no *.yaml specs") }
        let specs = SpecLoader.check(filesAt: files)
        let problems = specs.flatMap(\.spec.diagnostics)
        for problem in problems where problem.severity == .error { printError(problem.description) }
        guard !problems.hasErrors else { return 2 }
        let registries = SpecInterpreter.registries(specs.map(\.spec))
        let forms = specs.compactMap(\.spec.form).sorted { $0.name < $1.name }
        let records = Dictionary(specs.compactMap(\.spec.record).map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var suite = Conformance(
            base: url, token: args.values["--token"], refreshToken: args.values["--refresh-token"],
            workspace: args.values["--workspace"] ?? "conformance",
            timeout: TimeInterval(try args.integer("--timeout", default: 10, in: 1...120)),
            maxTime: TimeInterval(try args.integer("--max-time", default: 300, in: 1...86_400)), forms: forms, records: records,
            registry: registries.forms)
        suite.otherToken = args.values["--other-token"]
        suite.backOfficeToken = args.values["--back-office-token"]
        await suite.runAll()
        print("\n\(suite.passed) passed, \(suite.failed) failed, \(suite.skipped.count) of \(Rules.all.count) rules not checked")
        return suite.failed == 0 ? 0 : 1
    }
}
