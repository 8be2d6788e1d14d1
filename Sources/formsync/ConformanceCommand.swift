import FieldForms
import FormSyncClient
import FormSyncModel
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `formsync conformance URL`: checks a server against docs/PROTOCOL.md, one rule at a time, with
/// the example forms (NewCustomer, SalesOrder). Every check prints pass or FAIL and why.
enum ConformanceCommand {
    static let help = """
        usage: formsync conformance URL (--token T | --refresh-token R) [--workspace W] [--timeout SECONDS] [--max-time SECONDS]
                                        [--other-token T] [--back-office-token T]

        Checks the FormSync server at URL against docs/PROTOCOL.md: health, tokens, header
        syntax, idempotent replay, a key reused with another body, a document bound to its form,
        a create with other content, 412 with the current record, 409 for an edit of a field
        the server owns, 422 pointers, refresh after 401, uploads with right, wrong and missing
        Content-Digest, a body shorter than announced, a path that does not match the payload;
        records: the change feed carries a created record, GET /records answers it with its
        ETag, an edit form applies under If-Match (412 when stale, 428 without), the feed resumes exactly after its cursor, bad cursors and
        limits are 400; the access rules' wall: no FormSync-Workspace is 400, a workspace the
        token is not issued for is 403 (or 421), and with --other-token (another principal of
        the same workspace) and --back-office-token, the other principal's documents, files and
        uploads are out of reach and the back office's are not. The server must accept the
        example forms and records (FormSpecs/). Each run uses fresh document ids and keys.
        Bounds against a server that misbehaves: each exchange ends after --timeout seconds
        (default 10) and 32 MiB of reply, the whole run after --max-time seconds (default 300),
        and a server that does not answer GET /health stops the run at once.
        Exit status: 0 every check passed, 1 a check failed, 2 a usage mistake.
        """

    static func run(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(
            raw, options: ["--token", "--refresh-token", "--workspace", "--timeout", "--max-time", "--other-token", "--back-office-token"], flags: ["--help", "-h"])
        if args.flags.contains("--help") || args.flags.contains("-h") {
            print(help)
            return 0
        }
        guard args.positionals.count == 1, let url = URL(string: args.positionals[0]), let scheme = url.scheme, ["http", "https"].contains(scheme),
            url.host != nil
        else { throw UsageError("expected one http(s) URL") }
        guard args.values["--token"] != nil || args.values["--refresh-token"] != nil else { throw UsageError("give --token or --refresh-token") }
        var suite = Conformance(
            base: url, token: args.values["--token"], refreshToken: args.values["--refresh-token"],
            workspace: args.values["--workspace"] ?? "conformance", timeout: TimeInterval(try args.integer("--timeout", default: 10, in: 1...120)),
            maxTime: TimeInterval(try args.integer("--max-time", default: 300, in: 1...86_400)))
        suite.otherToken = args.values["--other-token"]
        suite.backOfficeToken = args.values["--back-office-token"]
        await suite.runAll()
        print("\n\(suite.passed) passed, \(suite.failed) failed")
        return suite.failed == 0 ? 0 : 1
    }
}

/// The checks, in order; each builds on what the server answered before.
struct Conformance {
    struct Reply {
        var status: Int
        var headers: [String: String]
        var data: Data
        var json: [String: Any]? { try? JSONSerialization.jsonObject(with: data) as? [String: Any] }
        var code: String? { json?["code"] as? String }
    }

    let base: URL
    var token: String?
    let refreshToken: String?
    let workspace: String
    let timeout: TimeInterval
    /// When the whole run must end (uptime, seconds): every exchange after it is not sent.
    let runDeadline: TimeInterval
    /// A token of another principal of the same workspace, and one of the back office.
    var otherToken: String?
    var backOfficeToken: String?
    let session: URLSession
    let collector = ReplyCollector()
    let run = UUID().uuidString.lowercased().prefix(8)
    var passed = 0
    var failed = 0

    init(base: URL, token: String?, refreshToken: String?, workspace: String, timeout: TimeInterval, maxTime: TimeInterval = 300) {
        runDeadline = ProcessInfo.processInfo.systemUptime + maxTime
        self.base = base
        self.token = token
        self.refreshToken = refreshToken
        self.workspace = workspace
        self.timeout = timeout
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        session = URLSession(configuration: configuration, delegate: collector, delegateQueue: nil)
    }

    mutating func check(_ name: String, _ condition: Bool, _ why: @autoclosure () -> String) {
        if condition {
            passed += 1
            print("pass  \(name)")
        } else {
            failed += 1
            print("FAIL  \(name): \(why())")
        }
    }

    func id(_ what: String) -> String { "cf-\(run)-\(what)" }

    /// Which `FormSync-Workspace` a request names.
    enum WorkspaceHeader {
        case suite
        case none
        case named(String)
    }

    /// One exchange, bounded: `timeout` seconds and 32 MiB of reply at most, and nothing once
    /// the run's own deadline has passed. Status 0: no reply.
    func send(
        _ method: String, _ path: String, headers: [String: String] = [:], body: Data? = nil, authorized: Bool = true, as bearer: String? = nil,
        workspace named: WorkspaceHeader = .suite
    ) async -> Reply {
        let left = runDeadline - ProcessInfo.processInfo.systemUptime
        guard left > 0 else { return Reply(status: 0, headers: [:], data: Data()) }
        var request = URLRequest(url: URL(string: base.absoluteString.trimmingCharacters(in: ["/"]) + path) ?? base)
        request.httpMethod = method
        request.httpBody = body
        request.timeoutInterval = timeout
        switch named {
        case .suite: request.setValue(workspace, forHTTPHeaderField: "FormSync-Workspace")
        case .named(let other): request.setValue(other, forHTTPHeaderField: "FormSync-Workspace")
        case .none: break
        }
        if authorized, let token = bearer ?? token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        guard let (http, data) = try? await collector.run(session.dataTask(with: request), limit: 32 << 20, deadline: max(1, min(timeout, left))) else {
            return Reply(status: 0, headers: [:], data: Data())
        }
        var lowered: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            if let key = key as? String, let value = value as? String { lowered[key.lowercased()] = value }
        }
        return Reply(status: http.statusCode, headers: lowered, data: data)
    }

    func submit<P: FormPayload>(_ payload: P, document: String, key: String, ifMatch: String? = nil, path: String? = nil) async -> Reply {
        var headers = [
            "Idempotency-Key": key, "FormSync-Document": document, "FormSync-Form": "\(P.formName); version=\(P.formVersion)",
            "Content-Type": "application/json",
        ]
        if let ifMatch { headers["If-Match"] = ifMatch }
        return await send("POST", path ?? payload.endpoint, headers: headers, body: try? FormRegistry.encode(payload))
    }

    /// A 2xx counts only as JSON echoing the document id (the captive-portal rule).
    mutating func acknowledges(_ name: String, _ reply: Reply, document: String) {
        check(name, (200..<300).contains(reply.status) && reply.headers["content-type"]?.hasPrefix("application/json") == true
            && reply.json?["document_id"] as? String == document,
            "HTTP \(reply.status), content type \(reply.headers["content-type"] ?? "none"), document_id \(reply.json?["document_id"] ?? "missing")")
    }

    mutating func runAll() async {
        let health = await send("GET", "/health", authorized: false)
        check("GET /health answers {service: formsync, status: ok}", health.status == 200 && health.json?["service"] as? String == "formsync"
            && health.json?["status"] as? String == "ok", "HTTP \(health.status) \(String(decoding: health.data.prefix(200), as: UTF8.self))")
        guard health.status != 0 else {
            print("stop  nothing answered at \(base.absoluteString) within \(Int(timeout)) s: no further check is run")
            return
        }

        if let refreshToken {
            let refreshed = await send("POST", "/auth/refresh", headers: ["Content-Type": "application/json"],
                                       body: try? JSONSerialization.data(withJSONObject: ["refresh_token": refreshToken]), authorized: false)
            token = refreshed.json?["access_token"] as? String ?? token
            check("POST /auth/refresh trades the refresh token for an access token", refreshed.status == 200 && token != nil, "HTTP \(refreshed.status)")
        }
        let customer = NewCustomer(name: "Conformance \(run)", segment: .retail)
        let document = id("customer")

        let saved = token
        token = "not-a-token-\(run)"
        let unauthorized = await submit(customer, document: document, key: id("k0"))
        token = saved
        check("a write with a bad token is 401 and not applied", unauthorized.status == 401, "HTTP \(unauthorized.status)")

        let badKey = await submit(customer, document: document, key: "has space")
        check("an Idempotency-Key outside the identifier syntax is 400", badKey.status == 400, "HTTP \(badKey.status)")

        let created = await submit(customer, document: document, key: id("k1"))
        acknowledges("a create is acknowledged with 2xx JSON echoing the document id", created, document: document)
        let etag = created.headers["etag"]
        check("the create carries an ETag and a positive id", etag != nil && ((created.json?["id"] as? NSNumber)?.int64Value ?? 0) > 0,
              "ETag \(etag ?? "missing"), id \(created.json?["id"] ?? "missing")")
        let customerID = (created.json?["id"] as? NSNumber)?.int64Value ?? 1

        let replay = await submit(customer, document: document, key: id("k1"))
        check("the same request under the same key replays the recorded reply",
              replay.status == created.status && replay.data == created.data, "HTTP \(replay.status) vs \(created.status)")

        let reused = await submit(NewCustomer(name: "Other \(run)", segment: .retail), document: document, key: id("k1"))
        check("another body under a used key is 422", reused.status == 422, "HTTP \(reused.status)")

        let again = await submit(customer, document: document, key: id("k2"))
        acknowledges("a create repeated with the same content under a new key is acknowledged", again, document: document)
        check("… and is not applied twice", again.headers["etag"] == etag, "ETag \(again.headers["etag"] ?? "missing") after \(etag ?? "missing")")

        let other = await submit(NewCustomer(name: "Someone else \(run)", segment: .retail), document: document, key: id("k3"))
        check("a create with other content for a held document is 409 document-exists with the record and ETag",
              other.status == 409 && other.code == "document-exists" && other.json?["record"] != nil && other.headers["etag"] != nil,
              "HTTP \(other.status) code \(other.code ?? "none")")

        let order = SalesOrder(
            customerId: EntityRef(customerID), orderDate: LocalDate("2026-11-30"),
            lines: [.init(sku: "AB-1234", quantity: 1, unitPrice: Money(minorUnits: 100, currency: "EUR"))])
        let misbound = await submit(order, document: document, key: id("k4"))
        check("a document id used under another form is 409 and never answers with the other record",
              misbound.status == 409 && !String(decoding: misbound.data, as: UTF8.self).contains("Conformance \(run)"),
              "HTTP \(misbound.status): \(String(decoding: misbound.data.prefix(200), as: UTF8.self))")

        var edited = customer
        edited.tradeName = "Edited \(run)"
        let edit = await submit(edited, document: document, key: id("k5"), ifMatch: etag)
        check("an edit with the current If-Match is applied with a new ETag", edit.status == 200 && edit.headers["etag"] != etag,
              "HTTP \(edit.status) ETag \(edit.headers["etag"] ?? "missing")")
        edited.tradeName = "Stale \(run)"
        let stale = await submit(edited, document: document, key: id("k6"), ifMatch: etag)
        check("an edit with a stale If-Match is 412 with the current record and ETag",
              stale.status == 412 && stale.json?["record"] != nil && stale.headers["etag"] == edit.headers["etag"],
              "HTTP \(stale.status) ETag \(stale.headers["etag"] ?? "missing")")

        var owned = order
        owned.creditLimit = Money(minorUnits: 50_000, currency: "EUR")
        let ownedDocument = id("owned")
        let placed = await submit(owned, document: ownedDocument, key: id("k6a"))
        acknowledges("a sales order is acknowledged", placed, document: ownedDocument)
        var raised = owned
        raised.creditLimit = Money(minorUnits: 900_000, currency: "EUR")
        let raise = await submit(raised, document: ownedDocument, key: id("k6b"), ifMatch: placed.headers["etag"])
        check("a document edit that changes a server-owned field (authority: server) is 409 authority-conflict with the record and ETag, not applied",
              raise.status == 409 && raise.code == "authority-conflict" && raise.json?["record"] != nil && raise.headers["etag"] == placed.headers["etag"],
              "HTTP \(raise.status) code \(raise.code ?? "none") ETag \(raise.headers["etag"] ?? "missing")")

        var invalid = order
        invalid.lines[0].quantity = 0
        let orderDocument = id("order")
        let rejected = await submit(invalid, document: orderDocument, key: id("k7"))
        let pointers = (rejected.json?["errors"] as? [[String: Any]] ?? []).compactMap { $0["pointer"] as? String }
        check("a payload breaking a rule is 422 with JSON Pointers to the fields", rejected.status == 422 && pointers.contains("#/lines/0/quantity"),
              "HTTP \(rejected.status) pointers \(pointers)")

        let misrouted = await submit(order, document: orderDocument, key: id("k8"), path: "/customers/\(customerID + 1_000_000)/orders")
        check("a path that does not match the payload is refused", misrouted.status == 404, "HTTP \(misrouted.status)")

        let bytes = Data("conformance file \(run)".utf8)
        let digest = "sha-256=:\(SHA256.hash(bytes).base64EncodedString()):"
        let fileDocument = id("file")
        let upload = await send("POST", "/files", headers: ["Idempotency-Key": id("k9"), "FormSync-Document": fileDocument,
                                                            "Content-Type": "text/plain", "Content-Digest": digest], body: bytes)
        acknowledges("an upload with its Content-Digest is acknowledged", upload, document: fileDocument)
        let wrong = await send("POST", "/files", headers: ["Idempotency-Key": id("k10"), "FormSync-Document": id("file2"),
                                                           "Content-Type": "text/plain", "Content-Digest": "sha-256=:\(SHA256.hash(Data("x".utf8)).base64EncodedString()):"], body: bytes)
        check("an upload whose Content-Digest does not match is 400", wrong.status == 400, "HTTP \(wrong.status)")
        let missing = await send("POST", "/files", headers: ["Idempotency-Key": id("k11"), "FormSync-Document": id("file3"), "Content-Type": "text/plain"], body: bytes)
        check("an upload without Content-Digest is 400", missing.status == 400, "HTTP \(missing.status)")

        await records(customerID: customerID, name: customer.name ?? "")
        let unfinished = await resumableUpload()
        await wall(document: document, fileDocument: fileDocument, bytes: bytes, digest: digest, upload: unfinished, customerID: customerID)

        if base.scheme == "http", let host = base.host {
            let status = Self.shortBody(host: host, port: UInt16(base.port ?? 80), token: token ?? "", workspace: workspace, document: id("short"), key: id("k12"))
            let held = await send("GET", "/documents/\(id("short"))")
            check("a body shorter than its Content-Length is refused and not applied", status != 0 && !(200..<300).contains(status) && held.status == 404,
                  "HTTP \(status), then GET /documents → \(held.status)")
        } else {
            print("note  a body shorter than its Content-Length: not checked over https (needs a raw socket)")
        }

    }

    /// Resumable uploads: create, append in two parts, a wrong offset, the offset query, the
    /// completion with the digest checked, the same document found again, a digest that lies.
    /// Returns the upload it leaves unfinished (the lying one, started over at 0).
    mutating func resumableUpload() async -> (document: String, location: String) {
        let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let digest = "sha-256=:\(SHA256.hash(bytes).base64EncodedString()):"
        let document = id("resumable")
        func create(_ document: String, digest: String, key: String) async -> Reply {
            await send("POST", "/uploads", headers: [
                "Idempotency-Key": key, "FormSync-Document": document, "Upload-Length": String(bytes.count), "Upload-Complete": "?0",
                "Repr-Digest": digest, "Content-Type": "application/octet-stream", "Upload-Draft-Interop-Version": "6",
            ])
        }
        let created = await create(document, digest: digest, key: id("k30"))
        let location = created.headers["location"] ?? ""
        check("POST /uploads creates the upload with its Location and Upload-Offset 0",
              created.status == 201 && location.hasPrefix("/uploads/") && created.headers["upload-offset"] == "0", "HTTP \(created.status) \(location)")
        func append(_ range: Range<Int>, at offset: Int, complete: Bool) async -> Reply {
            await send("PATCH", location, headers: [
                "Upload-Offset": String(offset), "Upload-Complete": complete ? "?1" : "?0", "Content-Type": "application/partial-upload",
            ], body: bytes.subdata(in: range))
        }
        let first = await append(0..<100_000, at: 0, complete: false)
        check("PATCH appends at the offset and answers the new Upload-Offset", first.status == 204 && first.headers["upload-offset"] == "100000",
              "HTTP \(first.status) offset \(first.headers["upload-offset"] ?? "none")")
        let wrong = await append(0..<100_000, at: 0, complete: false)
        check("a PATCH at another offset is 409 with the server's Upload-Offset", wrong.status == 409 && wrong.headers["upload-offset"] == "100000",
              "HTTP \(wrong.status) offset \(wrong.headers["upload-offset"] ?? "none")")
        let head = await send("HEAD", location)
        check("HEAD answers the offset the server holds", (200..<300).contains(head.status) && head.headers["upload-offset"] == "100000",
              "HTTP \(head.status) offset \(head.headers["upload-offset"] ?? "none")")
        let again = await create(document, digest: digest, key: id("k31"))
        check("creating the same document's upload again finds it, with its offset", again.status == 201 && again.headers["upload-offset"] == "100000",
              "HTTP \(again.status) offset \(again.headers["upload-offset"] ?? "none")")
        let last = await append(100_000..<bytes.count, at: 100_000, complete: true)
        let fileID = (last.json?["id"] as? NSNumber)?.int64Value ?? 0
        acknowledges("the completing PATCH stores the file and acknowledges the document", last, document: document)
        check("… with the file's id", fileID > 0, "id \(last.json?["id"] ?? "missing")")
        let done = await create(document, digest: digest, key: id("k32"))
        check("creating a finished upload again answers the stored file", done.status == 200 && (done.json?["id"] as? NSNumber)?.int64Value == fileID,
              "HTTP \(done.status)")
        let liar = id("resumable-liar")
        let lying = await create(liar, digest: "sha-256=:\(SHA256.hash(Data("other".utf8)).base64EncodedString()):", key: id("k33"))
        let lyingLocation = lying.headers["location"] ?? ""
        let whole = await send("PATCH", lyingLocation, headers: ["Upload-Offset": "0", "Upload-Complete": "?1", "Content-Type": "application/partial-upload"], body: bytes)
        check("bytes that do not match Repr-Digest are refused at completion", whole.status == 400 && whole.code == "digest-mismatch", "HTTP \(whole.status) \(whole.code ?? "")")
        return (liar, lyingLocation)
    }

    /// The access rules (docs/PROTOCOL.md, "Access rules"), route by route: without
    /// `FormSync-Workspace`, naming a workspace the token is not for, as another principal, as
    /// the back office. Each request would succeed for the suite's own token.
    mutating func wall(document: String, fileDocument: String, bytes: Data, digest: String, upload: (document: String, location: String), customerID: Int64) async {
        struct Route {
            var name: String
            var method: String
            var path: String
            var headers: [String: String]
            var body: Data?
            /// What another principal gets, and the back office.
            var other: Int
            var office: Int
        }
        let customer = try? FormRegistry.encode(NewCustomer(name: "Conformance \(run)", tradeName: "Wall \(run)", segment: .retail))
        var routes = [
            Route(name: "an edit of a document (If-Match: *)", method: "POST", path: "/customers", headers: [
                "FormSync-Document": document, "FormSync-Form": "NewCustomer; version=\(NewCustomer.formVersion)", "Content-Type": "application/json", "If-Match": "*",
            ], body: customer, other: 409, office: 200),
            Route(name: "GET /documents/{id}", method: "GET", path: "/documents/\(document)", headers: [:], other: 404, office: 200),
            Route(name: "POST /files", method: "POST", path: "/files", headers: [
                "FormSync-Document": fileDocument, "Content-Type": "text/plain", "Content-Digest": digest,
            ], body: bytes, other: 409, office: 200),
            Route(name: "HEAD /uploads/{id}", method: "HEAD", path: upload.location, headers: [:], other: 404, office: 204),
            Route(name: "PATCH /uploads/{id}", method: "PATCH", path: upload.location, headers: [
                "Upload-Offset": "0", "Upload-Complete": "?0", "Content-Type": "application/partial-upload",
            ], body: Data(), other: 404, office: 204),
            Route(name: "GET /changes", method: "GET", path: "/changes", headers: [:], other: 200, office: 200),
            Route(name: "GET /records/{type}/{id}", method: "GET", path: "/records/Customer/\(customerID)", headers: [:], other: 200, office: 200),
        ]
        for index in routes.indices where routes[index].method == "POST" { routes[index].headers["Idempotency-Key"] = id("wall-\(index)") }
        var foreign = "conformance-not-yours-\(run)"
        foreign = String(foreign.prefix(128))
        for (index, route) in routes.enumerated() {
            var headers = route.headers
            if headers["Idempotency-Key"] != nil { headers["Idempotency-Key"] = id("wall-none-\(index)") }
            let none = await send(route.method, route.path, headers: headers, body: route.body, workspace: .none)
            check("access: \(route.name) without FormSync-Workspace is 400 bad-workspace", none.status == 400, "HTTP \(none.status)")
            if headers["Idempotency-Key"] != nil { headers["Idempotency-Key"] = id("wall-foreign-\(index)") }
            let elsewhere = await send(route.method, route.path, headers: headers, body: route.body, workspace: .named(foreign))
            check("access: \(route.name) naming a workspace the token is not issued for is 403 (421 on a one-workspace server)",
                  elsewhere.status == 403 || elsewhere.status == 421, "HTTP \(elsewhere.status)")
        }
        guard let otherToken, let backOfficeToken else {
            print("not checked  access: another principal's and the back office's reach (give --other-token and --back-office-token)")
            return
        }
        for (index, route) in routes.enumerated() {
            var headers = route.headers
            if headers["Idempotency-Key"] != nil { headers["Idempotency-Key"] = id("wall-other-\(index)") }
            let other = await send(route.method, route.path, headers: headers, body: route.body, as: otherToken)
            check("access: \(route.name) by another principal is \(route.other)", other.status == route.other, "HTTP \(other.status)")
            check("access: … and its reply carries nothing of the document", route.other == 200 || !String(decoding: other.data, as: UTF8.self).contains("Conformance \(run)"),
                  "the reply holds the other principal's data")
            if headers["Idempotency-Key"] != nil { headers["Idempotency-Key"] = id("wall-office-\(index)") }
            let office = await send(route.method, route.path, headers: headers, body: route.body, as: backOfficeToken)
            check("access: \(route.name) by the back office is \(route.office)", office.status == route.office, "HTTP \(office.status)")
        }
    }

    /// Follows the change feed from `cursor` to its end (at most 500 pages); the changes seen
    /// and the last cursor, or nil when a page was not a feed.
    func readFeed(from cursor: String?) async -> (changes: [[String: Any]], cursor: String?)? {
        var cursor = cursor
        var changes: [[String: Any]] = []
        for _ in 0..<500 {
            let query = "limit=200" + (cursor.map { "&cursor=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0) } ?? "")
            let page = await send("GET", "/changes?" + query)
            guard page.status == 200, let json = page.json, let items = json["changes"] as? [[String: Any]], let next = json["cursor"] as? String else { return nil }
            changes += items
            cursor = next
            if json["more"] as? Bool != true { return (changes, cursor) }
        }
        return (changes, cursor)
    }

    /// The records checks: the feed, one record, edits under If-Match, cursors.
    mutating func records(customerID: Int64, name: String) async {
        let feed = await readFeed(from: nil)
        let listed = feed?.changes.last { $0["type"] as? String == "Customer" && ($0["id"] as? NSNumber)?.int64Value == customerID }
        check("GET /changes carries the Customer the create made, with its version and fields",
              (listed?["version"] as? NSNumber)?.intValue ?? 0 >= 1 && (listed?["record"] as? [String: Any])?["name"] as? String == name,
              feed == nil ? "not a feed" : "Customer \(customerID) \(listed == nil ? "missing" : "without its version or fields")")
        let one = await send("GET", "/records/Customer/\(customerID)")
        let etag = one.headers["etag"]
        check("GET /records/Customer/{id} answers the record with its ETag",
              one.status == 200 && etag != nil && (one.json?["record"] as? [String: Any])?["name"] as? String == name, "HTTP \(one.status)")

        let edit = CustomerUpdate(customerId: EntityRef(customerID), name: name, phone: "+351 000 \(run.prefix(4))", segment: .retail)
        let noBase = await submit(edit, document: id("edit0"), key: id("k20"))
        check("an edit of a record without If-Match is 428", noBase.status == 428, "HTTP \(noBase.status)")
        let applied = await submit(edit, document: id("edit1"), key: id("k21"), ifMatch: etag)
        acknowledges("an edit of a record under its current ETag is acknowledged", applied, document: id("edit1"))
        let entity = applied.json?["entity"] as? [String: Any]
        check("… with the record's new version and fields in `entity`",
              applied.headers["etag"] != etag && (entity?["record"] as? [String: Any])?["phone"] as? String == edit.phone,
              "ETag \(applied.headers["etag"] ?? "missing") after \(etag ?? "missing")")
        var stale = edit
        stale.phone = "+351 999 \(run.prefix(4))"
        let refused = await submit(stale, document: id("edit2"), key: id("k22"), ifMatch: etag)
        check("an edit of a record under a stale ETag is 412 with the record as the form sees it",
              refused.status == 412 && (refused.json?["record"] as? [String: Any])?["phone"] as? String == edit.phone, "HTTP \(refused.status)")
        let ghost = CustomerUpdate(customerId: EntityRef(9_007_199_254_740_000), name: name, segment: .retail)
        let missing = await submit(ghost, document: id("edit3"), key: id("k23"), ifMatch: "\"1\"")
        check("an edit of a record that does not exist is 404", missing.status == 404, "HTTP \(missing.status)")

        let after = await readFeed(from: feed?.cursor)
        let changed = after?.changes.filter { $0["type"] as? String == "Customer" && ($0["id"] as? NSNumber)?.int64Value == customerID } ?? []
        check("the feed resumes after its cursor with the edited record, once",
              changed.count == 1 && (changed.first?["record"] as? [String: Any])?["phone"] as? String == edit.phone,
              after == nil ? "not a feed" : "\(changed.count) entries for Customer \(customerID)")
        let badCursor = await send("GET", "/changes?cursor=not-a-cursor-\(run)")
        check("an unknown cursor is 400 (or 410 when the server lost its history)", badCursor.status == 400 || badCursor.status == 410, "HTTP \(badCursor.status)")
        let badLimit = await send("GET", "/changes?limit=0")
        check("limit=0 is 400", badLimit.status == 400, "HTTP \(badLimit.status)")
    }

    /// Sends a write whose body stops short of its Content-Length, then half-closes; the status
    /// the server answered (0 for none).
    static func shortBody(host: String, port: UInt16, token: String, workspace: String, document: String, key: String) -> Int {
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var info: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &info) == 0, let first = info else { return 0 }
        defer { freeaddrinfo(info) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else { return 0 }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let head = "POST /customers HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(token)\r\nIdempotency-Key: \(key)\r\n"
            + "FormSync-Document: \(document)\r\nFormSync-Workspace: \(workspace)\r\nFormSync-Form: NewCustomer; version=\(NewCustomer.formVersion)\r\n"
            + "Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"name\":\"Short\""
        _ = Data(head.utf8).withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        shutdown(fd, Int32(SHUT_WR))
        // Bounded: the status line is all that is read (16 KiB and 10 s at most, however the
        // peer trickles or floods).
        var reply = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ProcessInfo.processInfo.systemUptime + 10
        while reply.count < 16 << 10, !reply.contains(0x0A) {
            let left = deadline - ProcessInfo.processInfo.systemUptime
            guard left > 0 else { break }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, Int32(min(left, 10) * 1000) + 1) > 0 else { break }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            reply.append(contentsOf: buffer[0..<n])
        }
        let line = String(decoding: reply.prefix(20), as: UTF8.self).split(separator: " ")
        return line.count > 1 ? Int(line[1]) ?? 0 : 0
    }
}
