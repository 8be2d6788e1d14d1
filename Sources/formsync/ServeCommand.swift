import FieldForms
import FormSpec
import FormSyncCommandLine
import FormSyncInterpreter
import FormSyncModel
import FormSyncPostgres
import FormSyncProtocol
import FormSyncServer
import Foundation

/// `formsync serve`: the reference sync server on loopback, with the FieldForms forms.
enum ServeCommand {
    static let help = """
        usage: formsync serve [--port N] [--host ADDRESS] [--db DIR | --database URL [--migrate]] [--workspace W]
                              [--fault KIND[:COUNT]]... [--token-lifetime SECONDS] [--records FILE.json] [--principal P] [--specs DIR]
                              [--bandwidth BYTES_PER_SECOND] [--no-deferred-files] [--public-url URL]

        Serves the FormSync protocol (docs/PROTOCOL.md) on ADDRESS:N (default 127.0.0.1:8080; 0
        picks a free port) with its state in DIR (default ./formsync-server, the embedded SQLite
        store). --database postgres://USER@HOST:PORT/DB (or the FORMSYNC_DATABASE variable) keeps
        the state in PostgreSQL instead, files included, so that any number of nodes serve the
        same data behind a load balancer; --migrate brings the database's schema up to this
        build's first (once, even when several nodes start together; a node started without it
        refuses a schema that is not its own). It prints an enrolment link that enrols one
        device (single use, valid an hour; docs/PROTOCOL.md, "Devices and credentials"), a
        back-office token (which reads every principal's documents and records, makes enrolments
        and revokes devices) and an access token for trying the routes with curl. The link names
        the server as http://ADDRESS:N, or as --public-url (https, for a server behind TLS). With --workspace, a request whose FormSync-Workspace names
        another workspace is refused with 421; the tokens are issued for workspace W (without
        --workspace, for workspace "default"), and a request must name it. --specs serves the forms and records of a folder of
        specs (an app's own) without compiling them, every older version of a form brought up
        by its upgraders; without it, the FormSpecs/ examples built into this binary. --records seeds (or replaces) records as the back
        office would, from a JSON array of {"type": "Delivery", "id": 7, "record": {...}} (id
        optional: a new one is assigned; "workspace" optional: --workspace, or "default"); each record
        is checked against its record spec. The printed tokens act for principal P (default
        "default"), the value a record's scope field must hold to reach that device. Faults apply to the next COUNT requests (default 1):
          drop          commit, then cut the reply off after its head
          delay=MS      hold the request MS milliseconds (its key is in flight meanwhile)
          503=SECONDS   503 with Retry-After        429=SECONDS   429 with Retry-After
          captive       200 with a captive portal's HTML page
          401           401, as if the token had expired
          outage=SECONDS[@AFTER]  nothing answers (connections closed unread) for SECONDS,
                        starting AFTER seconds after the server starts (default at once)
        --bandwidth reads at most that many bytes per second from all connections together (a
        slow uplink, such as 20000 for 2G). --no-deferred-files answers as a server without
        deferred files would (files before the submissions that name them).
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
        let args = try Arguments(
            rest,
            options: [
                "--port", "--host", "--db", "--database", "--token-lifetime", "--workspace", "--records", "--principal", "--specs",
                "--bandwidth", "--public-url",
            ],
            flags: ["--help", "-h", "--migrate", "--no-deferred-files"])
        if args.flags.contains("--help") || args.flags.contains("-h") {
            print(help)
            return 0
        }
        let port = try args.integer("--port", default: 8080, in: 0...65535)
        guard (0...65535).contains(port) else { throw UsageError("--port must be 0 to 65535") }
        var registries = (forms: FormRegistry(FormCatalog.forms), records: RecordRegistry(FormCatalog.records))
        if let folder = args.values["--specs"] {
            guard FileManager.default.fileExists(atPath: folder) else {
                throw UsageError("--specs \(folder): \(String(cString: strerror(ENOENT)))")
            }
            let files = SpecLoader.specFiles(in: [folder])
            guard !files.isEmpty else { throw UsageError("--specs \(folder): no *.yaml specs") }
            let specs = SpecLoader.check(filesAt: files)
            let problems = specs.flatMap(\.spec.diagnostics)
            for problem in problems { printError(problem.description) }
            guard !problems.hasErrors else { return 1 }
            registries = SpecInterpreter.registries(specs.map(\.spec))
        }
        let lifetime = try args.integer("--token-lifetime", default: 3600, in: 1...31_536_000)
        let database =
            args.values["--database"] ?? ProcessInfo.processInfo.environment["FORMSYNC_DATABASE"].flatMap { $0.isEmpty ? nil : $0 }
        let server: SyncServer
        if let database {
            guard args.values["--db"] == nil else { throw UsageError("--db and --database name two stores: give one") }
            guard database.hasPrefix("postgres://") || database.hasPrefix("postgresql://") else {
                throw UsageError("--database takes a postgres:// URL (postgres://USER@HOST:PORT/DATABASE)")
            }
            let store: PostgresServerStore
            do {
                store = try PostgresServerStore(
                    url: database, migrate: args.flags.contains("--migrate"), now: Int64(Date().timeIntervalSince1970 * 1000))
            } catch {
                printError("formsync serve: \(error)")
                return 1
            }
            server = try SyncServer(
                store: store, registry: registries.forms, records: registries.records, tokenLifetimeSeconds: lifetime,
                workspace: args.values["--workspace"])
            printNow("store: PostgreSQL at \(PostgresConnection.redacted(database)) (schema \(PostgresServerStore.schemaVersion))")
        } else {
            guard !args.flags.contains("--migrate") else {
                throw UsageError("--migrate is for --database: the embedded store migrates itself")
            }
            server = try SyncServer(
                directory: args.values["--db"] ?? "formsync-server", registry: registries.forms, records: registries.records,
                tokenLifetimeSeconds: lifetime,
                workspace: args.values["--workspace"])
        }
        for fault in faults {
            if fault.hasPrefix("outage") {
                guard let (seconds, after) = FaultPlan.parseOutage(fault) else {
                    throw UsageError("--fault outage takes outage=SECONDS or outage=SECONDS@AFTER (each at most 86400), not '\(fault)'")
                }
                server.faults.outage(seconds: TimeInterval(seconds), after: TimeInterval(after))
                continue
            }
            guard let (kind, count) = FaultPlan.parse(fault) else { throw UsageError("unknown fault '\(fault)'") }
            server.faults.add(kind, count: count)
        }
        server.faults.limitBandwidth(bytesPerSecond: try args.integer("--bandwidth", default: 0, in: 0...(1 << 40)))
        if args.flags.contains("--no-deferred-files") { server.acceptsDeferredFiles = false }
        if let file = args.values["--records"] {
            let count = try seed(server, from: file, workspace: args.values["--workspace"] ?? "default", hosted: args.values["--workspace"])
            printNow("seeded \(count) records from \(file)")
        }
        let principal = args.values["--principal"] ?? "default"
        let host = args.values["--host"] ?? "127.0.0.1"
        // Tokens are issued for one workspace: the one hosted, or "default" on a server that
        // hosts any (docs/PROTOCOL.md, "Access rules"). They are issued before the server
        // listens: a crowd of connections that takes every descriptor once it does must not
        // leave the server unable to write its tokens, and so end it.
        let grant = SyncServer.Grant(principal: principal, workspaces: [args.values["--workspace"] ?? "default"])
        let enrolment = try server.makeEnrolment(principal: principal, workspace: grant.workspaces[0])
        let backOfficeToken = try server.issueAccessToken(
            SyncServer.Grant(principal: "back-office", workspaces: grant.workspaces, role: .backOffice))
        let accessToken = try server.issueAccessToken(grant)
        let actual = try server.start(host: host, port: UInt16(port))
        // Webhooks the back office registers go out from every node, a pass a second.
        server.webhooks.start()
        printNow("FormSync reference server on http://\(host):\(actual)")
        printNow("forms: \(server.acceptedForms.map { "\($0.name) v\($0.version)" }.joined(separator: ", "))")
        printNow("records: \(server.recordTypeNames.joined(separator: ", "))")
        printNow("workspace: \(grant.workspaces[0])")
        let publicURL = args.values["--public-url"] ?? "http://\(host):\(actual)"
        let link = EnrolmentLink(server: publicURL, workspace: grant.workspaces[0], code: enrolment.code)
        if EnrolmentLink(parsing: link.description) == nil {
            printNow(
                "enrolment code (one device, an hour): \(enrolment.code) (no link: \(publicURL) is not https, nor http on loopback; give --public-url)"
            )
        } else {
            printNow("enrolment link (one device, an hour): \(link)")
            // The same link as a QR code, for a phone to scan off the operator's screen.
            if isatty(STDOUT_FILENO) == 1, let code = EnrolmentQRCode(link.description) { printNow(code.terminal) }
        }
        printNow("back-office token: \(backOfficeToken)")
        printNow("access token:  \(accessToken)")
        while true { try await Task.sleep(for: .seconds(3600)) }
    }

    /// The largest seed file read.
    static let maxSeedBytes = 256 << 20

    /// Seeds records from a JSON array; every problem names the entry it is in.
    static func seed(_ server: SyncServer, from path: String, workspace: String, hosted: String?) throws -> Int {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path), let size = attributes[.size] as? Int else {
            throw UsageError("--records \(path): \(String(cString: strerror(errno)))")
        }
        guard size <= maxSeedBytes else { throw UsageError("--records \(path): larger than \(maxSeedBytes >> 20) MB") }
        guard let data = FileManager.default.contents(atPath: path),
            let entries = (try? JSONSerialization.jsonObject(with: data)) as? [Any]
        else { throw UsageError("--records \(path): not a JSON array of records") }
        var seeds: [SyncServer.RecordSeed] = []
        for (index, item) in entries.enumerated() {
            guard let entry = item as? [String: Any], let type = entry["type"] as? String, let record = entry["record"] as? [String: Any],
                let fields = try? JSONSerialization.data(withJSONObject: record, options: [.sortedKeys])
            else { throw UsageError("--records \(path): entry \(index) needs \"type\" and a \"record\" object") }
            var id: Int64?
            if let raw = entry["id"] {
                guard let number = raw as? NSNumber, let exact = Int64(exactly: number.doubleValue), exact >= 1 else {
                    throw UsageError("--records \(path): entry \(index): \"id\" must be a whole number from 1")
                }
                id = exact
            }
            let named = entry["workspace"] as? String ?? workspace
            if let hosted, named != hosted {
                throw UsageError(
                    "--records \(path): entry \(index) is for workspace \"\(named.prefix(40))\", and this server hosts only \(hosted)")
            }
            seeds.append(SyncServer.RecordSeed(type: type, id: id, fields: fields, workspace: named))
        }
        do {
            try server.putRecords(seeds)
        } catch {
            throw UsageError("--records \(path): nothing was seeded: \(error)")
        }
        return entries.count
    }
}
