import FieldForms
import FormSyncServer
import Foundation

/// `formsync serve`: the reference sync server on loopback, with the FieldForms forms.
enum ServeCommand {
    static let help = """
        usage: formsync serve [--port N] [--db DIR] [--workspace W] [--fault KIND[:COUNT]]... [--token-lifetime SECONDS]

        Serves the FormSync protocol (docs/PROTOCOL.md) on 127.0.0.1:N (default 8080; 0 picks a
        free port) with its state in DIR (default ./formsync-server), and prints a refresh token
        and an access token to use. With --workspace, a request whose FormSync-Workspace names
        another workspace is refused with 421. Faults apply to the next COUNT requests (default 1):
          drop          commit, then drop the connection without replying
          delay=MS      hold the request MS milliseconds (its key is in flight meanwhile)
          503=SECONDS   503 with Retry-After        429=SECONDS   429 with Retry-After
          captive       200 with a captive portal's HTML page
          401           401, as if the token had expired
        Stop it with Ctrl-C.
        """

    static func run(_ raw: [String]) async throws -> Int32 {
        var faults: [String] = []
        var rest: [String] = []
        var iterator = raw.makeIterator()
        while let argument = iterator.next() {
            if argument == "--fault" {
                guard let value = iterator.next() else { throw UsageError("--fault needs a value") }
                faults.append(value)
            } else {
                rest.append(argument)
            }
        }
        let args = try Arguments(rest, options: ["--port", "--db", "--token-lifetime", "--workspace"], flags: ["--help", "-h"])
        if args.flags.contains("--help") || args.flags.contains("-h") {
            print(help)
            return 0
        }
        let port = try args.integer("--port", default: 8080, in: 0...65535)
        guard (0...65535).contains(port) else { throw UsageError("--port must be 0 to 65535") }
        let server = try SyncServer(
            directory: args.values["--db"] ?? "formsync-server", forms: FormCatalog.forms,
            tokenLifetimeSeconds: try args.integer("--token-lifetime", default: 3600, in: 1...31_536_000), workspace: args.values["--workspace"])
        for fault in faults {
            guard let (kind, count) = FaultPlan.parse(fault) else { throw UsageError("unknown fault '\(fault)'") }
            server.faults.add(kind, count: count)
        }
        let actual = try server.start(port: UInt16(port))
        printNow("FormSync reference server on http://127.0.0.1:\(actual)")
        printNow("forms: \(FormCatalog.forms.map { "\($0.formName) v\($0.formVersion)" }.joined(separator: ", "))")
        printNow("refresh token: \(server.issueRefreshToken())")
        printNow("access token:  \(server.issueAccessToken())")
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}
