import FormSyncCommandLine
import FormSyncHTTP
import Foundation

/// `formsync preview`: a live preview of the forms for their authors.
enum PreviewCommand {
    static let help = """
        usage: formsync preview [SPECS...] [--port N] [--host ADDRESS]

        Serves a page per form of the specs (files or folders; default FormSpecs) on
        ADDRESS:N (default 127.0.0.1:8765; 0 picks a free port): a widget for each field,
        relevance, calculations, constraints and `required` acting as you type, and the payload
        the outbox would queue with its validation errors and their JSON Pointers. The pages'
        logic is generated from the checked specs. Save a spec and the pages reload; while a
        spec does not check, they show its errors at their positions. Stop it with Ctrl-C.
        """

    static func run(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(raw, options: ["--port", "--host"], flags: ["--help", "-h"])
        if !args.flags.isEmpty {
            print(help)
            return 0
        }
        let paths = args.positionals.isEmpty ? ["FormSpecs"] : args.positionals
        _ = try SpecInput.files(paths)
        let port = try args.integer("--port", default: 8765, in: 0...65535)
        let host = args.values["--host"] ?? "127.0.0.1"
        let site = PreviewSite(paths: paths)
        let snapshot = site.snapshot()
        let server = HTTPServer { request in site.handle(request) }
        let actual = try server.start(host: host, port: UInt16(port))
        for diagnostic in snapshot.diagnostics { printError(diagnostic.description) }
        printNow(
            "FormSync preview on http://\(host):\(actual)/ (\(snapshot.forms.count) forms: \(snapshot.forms.map(\.name).joined(separator: ", ")))"
        )
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}
