import FormSpec
import FormSyncCommandLine
import FormSyncOpenAPI
import Foundation

/// `formsync openapi PATH... [--output FILE] [--check]`: the wire protocol as OpenAPI 3.1, with
/// the endpoints and payload schemas of the forms in PATH.
enum OpenAPICommand {
    static let help = """
        usage: formsync openapi PATH... [--output FILE] [--check]

        Writes the wire protocol (docs/PROTOCOL.md) as an OpenAPI 3.1 description in YAML: every
        route of the protocol, and for each form in PATH (spec files or folders) its endpoint and
        the JSON Schema of its payload, so that a backend team can generate a server skeleton in
        its own language. Without --output it goes to standard output. With --check, FILE is
        compared with what would be written instead (exit 1 when it differs). A copy for the
        specs in FormSpecs is checked in as docs/openapi.yaml.
        Exit status: 0 ok, 1 spec errors or (with --check) a difference, 2 usage mistake.
        """

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, options: ["--output", "-o"], flags: ["--check", "--help", "-h"])
        if args.flags.contains("--help") || args.flags.contains("-h") {
            print(help)
            return 0
        }
        let output = args.values["--output"] ?? args.values["-o"]
        if args.flags.contains("--check") && output == nil { throw UsageError("--check needs --output FILE to compare") }
        let files = try SpecInput.files(args.positionals)
        let specs = SpecLoader.check(filesAt: files)
        let errors = specs.flatMap(\.spec.diagnostics).filter { $0.severity == .error }
        guard errors.isEmpty, specs.allSatisfy({ $0.spec.form != nil || $0.spec.record != nil }) else {
            for diagnostic in errors { printError(diagnostic.description) }
            printError("\(files.count) spec(s): \(errors.count) error(s); nothing written")
            return 1
        }
        let document = OpenAPIGenerator.document(
            forms: specs.compactMap(\.spec.form), records: specs.compactMap(\.spec.record), version: FormSyncTool.version)
        let text = YAMLRenderer.render(document)
        guard let output else {
            print(text, terminator: "")
            return 0
        }
        if args.flags.contains("--check") {
            guard FileManager.default.contents(atPath: output) == Data(text.utf8) else {
                printError(
                    "\(output):1:1: error: stale: it differs from what formsync openapi produces now (run: formsync openapi \(args.positionals.joined(separator: " ")) --output \(output))"
                )
                return 1
            }
            printError("\(output) is up to date")
            return 0
        }
        try WriteFailure.writing(output) { try Data(text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic) }
        printError("\(output): written")
        return 0
    }
}
