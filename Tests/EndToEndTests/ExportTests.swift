import FieldForms
import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import FormSyncServer
import FormSyncTesting
import FormSyncTorture
import Foundation
import Testing

/// `formsync export` against a real server over HTTP: the CSV tables it writes, read back by
/// Python's csv module, hold exactly the server's documents at their latest versions (lists in
/// their own tables joined by keys), and a second run adds only what is new.
struct ExportTests {
    /// Python's reading of the export, against the documents the test wrote out as JSON: the
    /// same flattening written a second time, in another language, as the oracle.
    static let oracle = #"""
        csv, json, os, sys = (__import__(name) for name in ("csv", "json", "os", "sys"))

        out, expected_path = sys.argv[1], sys.argv[2]
        expected = json.load(open(expected_path, encoding="utf-8"))

        def cell(v):
            if v is None: return ""
            if isinstance(v, bool): return "true" if v else "false"
            if isinstance(v, float) and v.is_integer(): return str(int(v))
            if isinstance(v, (int, float)): return str(v)
            if isinstance(v, list): return " ".join(cell(x) for x in v)
            return v

        def flatten(record, table, key, tables, parent=None):
            row = {} if parent is None else {"PARENT_KEY": parent, "KEY": key}
            stack = [("", record)]
            while stack:
                prefix, v = stack.pop()
                if isinstance(v, dict):
                    for name in sorted(v, reverse=True):
                        stack.append((prefix + "-" + name if prefix else name, v[name]))
                elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
                    for i, item in enumerate(v):
                        flatten(item, table + "-" + prefix, "%s/%s[%d]" % (key, prefix, i + 1), tables, key)
                else:
                    row[prefix] = cell(v)
            tables.setdefault(table, {})[key] = row

        wanted = {}
        for document in expected:
            flatten(document["record"], document["form"], document["document_id"], wanted)
            wanted[document["form"]][document["document_id"]]["_version"] = str(document["version"])

        problems = []
        for table, rows in wanted.items():
            path = os.path.join(out, table + ".csv")
            with open(path, newline="", encoding="utf-8") as f:
                found = {r["KEY"]: r for r in csv.DictReader(f)}
            if set(found) != set(rows):
                problems.append("%s: keys %s, expected %s" % (table, sorted(found), sorted(rows)))
                continue
            for key, row in rows.items():
                for column, value in row.items():
                    if found[key].get(column) != value:
                        problems.append("%s %s %s: %r, expected %r" % (table, key, column, found[key].get(column), value))
        for name in os.listdir(out):
            if name.endswith(".csv") and name[:-4] not in wanted:
                problems.append("an unexpected table " + name)
        print("\n".join(problems) if problems else "equal: %d tables" % len(wanted))
        sys.exit(1 if problems else 0)
        """#

    static func python(_ arguments: [String]) async throws -> ProcessRunner.Result {
        let python = URL(fileURLWithPath: "/usr/bin/python3")
        try #require(
            FileManager.default.isExecutableFile(atPath: python.path), "python3 is needed: apt-get install python3 (.ci/run installs it)")
        return try await ProcessRunner.run(python, arguments)
    }

    @Test func theCSVTablesHoldTheServersDocumentsAndASecondRunAddsOnlyWhatIsNew() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try TestStore.server(
            directory: folder.appendingPathComponent("server").path, forms: FormCatalog.forms, records: FormCatalog.records)
        _ = try server.start()
        defer { server.stop() }
        let device = try server.issueAccessToken(principal: "ada", workspaces: ["acme"])
        let office = try server.issueAccessToken(principal: "office", workspaces: ["acme"], role: .backOffice)
        var key = 0
        func submit<P: FormPayload>(_ payload: P, document: String, ifMatch: String? = nil) throws {
            key += 1
            var headers = [
                "authorization": "Bearer \(device)", "formsync-workspace": "acme", "idempotency-key": "k-\(key)",
                "formsync-document": document, "formsync-form": "\(P.formName); version=\(P.formVersion)",
                "content-type": "application/json",
            ]
            if let ifMatch { headers["if-match"] = ifMatch }
            let reply = server.handle(
                HTTPRequest(method: "POST", path: payload.endpoint, query: nil, headers: headers, body: try FormRegistry.encode(payload)))
            try #require([200, 201].contains(reply?.status ?? 0), "\(String(decoding: reply?.body ?? Data(), as: UTF8.self))")
        }
        for n in 1...3 {
            try submit(
                SalesOrder(
                    customerId: EntityRef(Int64(n)), orderDate: LocalDate("2026-12-0\(n)"),
                    lines: (1...n).map {
                        .init(sku: "AB-\(1000 + $0)", quantity: $0, unitPrice: Money(minorUnits: Int64(250 * $0), currency: "EUR"))
                    }), document: "order-\(n)")
        }
        try submit(NewCustomer(name: "Harbour, \"the\" café", segment: .retail, acceptsCash: true), document: "customer-1")
        try submit(NewCustomer(name: "Old Town\nBakery", segment: .horeca), document: "customer-2")
        try submit(NewCustomer(name: "Old Town Bakery", segment: .horeca), document: "customer-2", ifMatch: "\"1\"")

        func expectedJSON() throws -> URL {
            let documents = server.documents().map { document -> [String: Any] in
                [
                    "form": document.form, "document_id": document.documentID, "version": document.version,
                    "record": (try? JSONSerialization.jsonObject(with: document.payload)) ?? [:],
                ]
            }
            let url = folder.appendingPathComponent("expected-\(documents.count).json")
            try JSONSerialization.data(withJSONObject: documents).write(to: url)
            return url
        }
        let out = folder.appendingPathComponent("export")
        let arguments = ["export", "--server", server.baseURL.absoluteString, "--workspace", "acme", "--out", out.path]
        let first = try await ProcessRunner.run(DemoProcessTests.formsync, arguments, environment: ["FORMSYNC_TOKEN": office])
        #expect(first.status == 0, "\(first.errors)")
        #expect(first.errors.contains("6 new event(s); 5 document(s)"), "\(first.errors)")
        let checked = try await Self.python(["-c", Self.oracle, out.path, try expectedJSON().path])
        #expect(checked.status == 0, "\(checked.output)\(checked.errors)")
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("SalesOrder-lines.csv").path))

        // More work, and a verdict: the second run reads only what came after its cursor.
        try submit(
            SalesOrder(
                customerId: EntityRef(9), orderDate: LocalDate("2026-12-06"),
                lines: [.init(sku: "ZZ-0001", quantity: 7, unitPrice: Money(minorUnits: 99, currency: "EUR"))]), document: "order-4")
        let reviewed = server.handle(
            HTTPRequest(
                method: "POST", path: "/documents/order-2/reviews", query: nil,
                headers: ["authorization": "Bearer \(office)", "formsync-workspace": "acme"],
                body: try JSONEncoder().encode(ReviewRequest(verdict: .approved))))
        #expect(reviewed?.status == 201)
        let second = try await ProcessRunner.run(DemoProcessTests.formsync, arguments, environment: ["FORMSYNC_TOKEN": office])
        #expect(second.status == 0 && second.errors.contains("2 new event(s); 6 document(s)"), "\(second.errors)")
        let again = try await Self.python(["-c", Self.oracle, out.path, try expectedJSON().path])
        #expect(again.status == 0, "\(again.output)\(again.errors)")
        let journal = try String(contentsOf: out.appendingPathComponent("submissions.ndjson"), encoding: .utf8)
        let ids = journal.split(separator: "\n").compactMap { line in
            (try? JSONDecoder().decode(SubmissionEvent.self, from: Data(line.utf8)))?.eventID
        }
        #expect(ids.count == 8 && Set(ids).count == 8, "every event once in the journal: \(ids)")
        let orders = try String(contentsOf: out.appendingPathComponent("SalesOrder.csv"), encoding: .utf8)
        #expect(orders.contains("order-2") && orders.contains(",approved"), "the verdict is in the table")

        // Another server's export is not mixed into this folder.
        let other = try await ProcessRunner.run(
            DemoProcessTests.formsync, ["export", "--server", "http://127.0.0.1:1", "--workspace", "acme", "--out", out.path],
            environment: ["FORMSYNC_TOKEN": office])
        #expect(other.status == 1 && other.errors.contains("export to another folder"), "\(other.errors)")
    }
}
