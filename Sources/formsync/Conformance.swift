import FormSpec
import FormSyncClient
import FormSyncCommandLine
import FormSyncModel
import FormSyncProtocol
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The conformance run against one server: each check enforces one rule of docs/PROTOCOL.md
/// (`ConformanceRule`), with payloads made from the server's own specs.
struct Conformance {
    struct Reply {
        var status: Int
        var headers: [String: String]
        var data: Data
        var json: [String: Any]? { try? JSONSerialization.jsonObject(with: data) as? [String: Any] }
        /// The reply's `code` member as sent, and as one of the protocol's codes.
        var codeText: String? { json?["code"] as? String }
        var code: ProblemCode? { codeText.flatMap(ProblemCode.init(rawValue:)) }
        var text: String { String(decoding: data.prefix(300), as: UTF8.self) }
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
    /// The forms and records the server serves, and their interpreted registry.
    let forms: [FormDefinition]
    let records: [String: RecordDefinition]
    let registry: FormRegistry
    let session: URLSession
    let collector = ReplyCollector()
    /// This run's tag, in every document id and key it sends.
    let run: String
    var passed = 0
    var failed = 0
    var skipped: [ConformanceRule: String] = [:]
    var checked: Set<ConformanceRule> = []
    var samples: ConformanceSamples

    init(
        base: URL, token: String?, refreshToken: String?, workspace: String, timeout: TimeInterval, maxTime: TimeInterval,
        forms: [FormDefinition],
        records: [String: RecordDefinition], registry: FormRegistry
    ) {
        runDeadline = ProcessInfo.processInfo.systemUptime + maxTime
        run = String(UUID().uuidString.lowercased().prefix(8))
        self.base = base
        self.token = token
        self.refreshToken = refreshToken
        self.workspace = workspace
        self.timeout = timeout
        self.forms = forms
        self.records = records
        self.registry = registry
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        session = URLSession(configuration: configuration, delegate: collector, delegateQueue: collector.makeDelegateQueue())
        samples = ConformanceSamples(run: run)
    }

    // MARK: Verdicts

    mutating func check(_ rule: ConformanceRule, _ condition: Bool, _ why: @autoclosure () -> String, about: String? = nil) {
        checked.insert(rule)
        let name = "\(rule.section): \(rule.text)\(about.map { " (\($0))" } ?? "")"
        if condition {
            passed += 1
            print("pass  \(name)")
        } else {
            failed += 1
            print("FAIL  \(name): \(why())")
        }
    }

    mutating func notChecked(_ rule: ConformanceRule, _ reason: String) {
        guard !checked.contains(rule), skipped[rule] == nil else { return }
        skipped[rule] = reason
        print("not checked  \(rule.section): \(rule.text): \(reason)")
    }

    func id(_ what: String) -> String { "cf-\(run)-\(what)" }

    // MARK: Exchanges

    /// Which `FormSync-Workspace` a request names.
    enum WorkspaceHeader {
        case suite
        case none
        case named(String)
    }

    /// One exchange, bounded: `timeout` seconds and 32 MiB of reply at most, and nothing once
    /// the run's own deadline has passed. Status 0: no reply.
    func send(
        _ method: String, _ path: String, headers: [String: String] = [:], body: Data? = nil, authorized: Bool = true,
        as bearer: String? = nil,
        workspace named: WorkspaceHeader = .suite
    ) async -> Reply {
        let left = runDeadline - ProcessInfo.processInfo.systemUptime
        guard left > 0 else { return Reply(status: 0, headers: [:], data: Data()) }
        var request = URLRequest(url: URL(string: base.absoluteString.trimmingCharacters(in: ["/"]) + path) ?? base)
        request.httpMethod = method
        request.httpBody = body
        request.timeoutInterval = timeout
        switch named {
        case .suite: request.setValue(workspace, forHTTPHeaderField: ProtocolHeader.workspace)
        case .named(let other): request.setValue(other, forHTTPHeaderField: ProtocolHeader.workspace)
        case .none: break
        }
        if authorized, let token = bearer ?? token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        guard
            let (http, data) = try? await collector.run(
                session.dataTask(with: request), limit: 32 << 20, deadline: max(1, min(timeout, left)))
        else {
            return Reply(status: 0, headers: [:], data: Data())
        }
        var lowered: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            if let key = key as? String, let value = value as? String { lowered[key.lowercased()] = value }
        }
        return Reply(status: http.statusCode, headers: lowered, data: data)
    }

    /// The canonical bytes of a payload object and the path its form computes from it.
    func encoded(_ form: FormDefinition, _ object: [String: Any]) -> (body: Data, path: String)? {
        guard let body = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]),
            let entry = registry[form.name], let remapped = try? entry.remap(body, [:])
        else { return nil }
        return (body, remapped.endpoint)
    }

    /// Submits `object` as a document of `form`.
    func submit(
        _ form: FormDefinition, _ object: [String: Any], document: String, key: String, ifMatch: String? = nil, path: String? = nil,
        version: Int? = nil,
        as bearer: String? = nil
    ) async -> Reply {
        guard let (body, computed) = encoded(form, object) else {
            return Reply(status: -1, headers: [:], data: Data("the payload could not be encoded".utf8))
        }
        var headers = [
            ProtocolHeader.idempotencyKey: key, ProtocolHeader.document: document,
            ProtocolHeader.form: "\(form.name); version=\(version ?? form.version)",
            "Content-Type": "application/json",
        ]
        if let ifMatch { headers[ProtocolHeader.ifMatch] = ifMatch }
        return await send("POST", path ?? computed, headers: headers, body: body, as: bearer)
    }

    /// A 2xx counts only as JSON echoing the document id (the captive-portal rule).
    static func acknowledges(_ reply: Reply, document: String) -> Bool {
        Acknowledgement.acknowledges(
            status: reply.status, contentType: reply.headers["content-type"], object: reply.json, document: document)
    }

    static func describe(_ reply: Reply) -> String {
        "HTTP \(reply.status), content type \(reply.headers["content-type"] ?? "none"), code \(reply.codeText ?? "none")"
    }

    // MARK: Samples

    /// Uploads a small file of `contentType` (POST /files); its reference.
    func uploadFile(_ contentType: String) async -> (id: Int64, byteCount: Int, contentType: String)? {
        let filler = Data("conformance file \(run) \(contentType)".utf8)
        let bytes = contentType == "image/png" ? Self.tinyPNG : Data(MediaSignature.signature(of: contentType) ?? []) + filler
        let document = id("sample-file-\(contentType.filter { $0.isLetter || $0.isNumber })")
        let reply = await send(
            "POST", "/files",
            headers: [
                ProtocolHeader.idempotencyKey: id("sample-file-key-\(contentType.filter { $0.isLetter || $0.isNumber })"),
                ProtocolHeader.document: document,
                "Content-Type": contentType, ProtocolHeader.contentDigest: "sha-256=:\(SHA256.hash(bytes).base64EncodedString()):",
            ], body: bytes)
        guard Self.acknowledges(reply, document: document), let fileID = (reply.json?[Acknowledgement.id] as? NSNumber)?.int64Value,
            fileID > 0
        else {
            return nil
        }
        return (fileID, bytes.count, contentType)
    }

    /// A valid payload of `form`, or nil with the reason.
    mutating func sample(_ form: FormDefinition, variant: Int = 0, including extra: Set<String> = []) async -> ([String: Any]?, String?) {
        for type in ConformanceSamples.mediaTypes(of: form, including: extra) where samples.files[type] == nil {
            if let file = await uploadFile(type) { samples.files[type] = file }
        }
        switch samples.payload(form, variant: variant, including: extra) {
        case .failure(let problem): return (nil, problem.reason)
        case .success(var object):
            // The sample must pass the form's own rules, as the server will run them: settled
            // first, as a device settles a form before it queues it (a field that is not
            // relevant is cleared, a calculated one computed).
            guard let (raw, _) = encoded(form, object), let entry = registry[form.name] else {
                return (nil, "the sample could not be encoded")
            }
            if let settled = try? entry.recalculate(raw),
                let settledObject = try? JSONSerialization.jsonObject(with: settled) as? [String: Any]
            {
                object = settledObject
            }
            guard let (body, _) = encoded(form, object) else { return (nil, "the sample could not be encoded") }
            let errors = entry.validate(body)
            guard errors.isEmpty else {
                return (nil, "the sample breaks \(errors.map { "\($0.pointer) \($0.code)" }.joined(separator: ", "))")
            }
            return (object, nil)
        }
    }

    /// A 1×1 PNG, for fields that take images.
    static let tinyPNG = Data(
        base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")!

    /// Follows the change feed from `cursor` to its end (at most 500 pages); the changes seen
    /// and the last cursor, or nil when a page was not a feed.
    func readFeed(from cursor: String?, as bearer: String? = nil) async -> (changes: [[String: Any]], cursor: String?)? {
        var cursor = cursor
        var changes: [[String: Any]] = []
        for _ in 0..<500 {
            let query =
                "limit=200" + (cursor.map { "&cursor=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0) } ?? "")
            let page = await send("GET", "/changes?" + query, as: bearer)
            guard page.status == 200, let json = page.json, let items = json[FeedPage.changes] as? [[String: Any]],
                let next = json[FeedPage.cursor] as? String
            else { return nil }
            changes += items
            cursor = next
            if json[FeedPage.more] as? Bool != true { return (changes, cursor) }
        }
        return (changes, cursor)
    }

    /// Learns a record id of every type the feed holds, for references; then makes one, with a
    /// form that creates it, for each type a form refers to and the feed lacks.
    mutating func learnRecords() async {
        if let feed = await readFeed(from: nil) {
            for change in feed.changes where change[FeedPage.Change.deleted] as? Bool != true {
                if let type = change[FeedPage.Change.type] as? String, let id = (change[FeedPage.Change.id] as? NSNumber)?.int64Value,
                    samples.recordIDs[type] == nil
                {
                    samples.recordIDs[type] = id
                }
            }
        }
        for _ in 0..<3 {
            for form in forms where form.binding?.action == .creates {
                guard let type = form.binding?.record, samples.recordIDs[type] == nil else { continue }
                let (object, _) = await sample(form)
                guard let object else { continue }
                let document = id("seed-\(type)")
                let reply = await submit(form, object, document: document, key: id("seed-key-\(type)"))
                if Self.acknowledges(reply, document: document), let created = (reply.json?[Acknowledgement.id] as? NSNumber)?.int64Value {
                    samples.recordIDs[type] = created
                }
            }
        }
    }
}
