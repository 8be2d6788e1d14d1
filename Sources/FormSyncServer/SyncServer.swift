import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import FormSyncSQLite
import Foundation
import Synchronization

/// The reference FormSync server (docs/PROTOCOL.md): an idempotency ledger, document identity,
/// versions with ETags, validation with the same generated validators as the client, server
/// authority over money, file storage by digest, bearer tokens with expiry, and fault injection.
/// It keeps its state in a `ServerStore` (the embedded SQLite store by default; PostgreSQL, shared
/// by any number of nodes, through `FormSyncPostgres`) and serves HTTP/1.1 (`FormSyncHTTP`).
public final class SyncServer: @unchecked Sendable {
    /// A document as the server holds it.
    public struct Document: Sendable, Equatable {
        public var documentID: String
        public var id: Int64
        public var form: String
        public var formVersion: Int
        public var version: Int
        public var payload: Data
        /// How many writes were applied to it (1 for a create, +1 per accepted edit).
        public var appliedWrites: Int

        package init(documentID: String, id: Int64, form: String, formVersion: Int, version: Int, payload: Data, appliedWrites: Int) {
            self.documentID = documentID
            self.id = id
            self.form = form
            self.formVersion = formVersion
            self.version = version
            self.payload = payload
            self.appliedWrites = appliedWrites
        }
    }

    /// One request as the server saw it, in arrival order.
    public struct LoggedRequest: Sendable, Equatable {
        public var method: String
        public var path: String
        public var idempotencyKey: String?
        public var documentID: String?
        /// The `FormSync-Workspace` header, when sent.
        public var workspace: String?
        /// The status sent, or nil when the reply was dropped.
        public var status: Int?
        /// Whether the reply was replayed from the idempotency ledger.
        public var replayed: Bool
        /// The body's size in bytes.
        public var bodyBytes: Int = 0
    }

    /// Faults to inject into the next requests (tests, the demo, `formsync serve --fault`).
    public let faults = FaultPlan()
    private let deferredFiles = Atomic<Bool>(true)
    private let fileLookup = Atomic<Bool>(true)
    /// Whether it answers `GET /files/sha-256/<hex>` (on by default); off, the route is unknown
    /// (404 no-route), as on a server without the feature (the benchmark's baseline).
    package var offersFileLookup: Bool {
        get { fileLookup.load(ordering: .relaxed) }
        set { fileLookup.store(newValue, ordering: .relaxed) }
    }
    /// Whether it takes submissions that name files by digest before their bytes (on by
    /// default). Off, it answers as a server without the feature would: `deferred-files` is not
    /// announced and a pending file is refused with `422`, so that clients fall back to
    /// sending files first (tests and `serve --no-deferred-files`).
    public var acceptsDeferredFiles: Bool {
        get { deferredFiles.load(ordering: .relaxed) }
        set { deferredFiles.store(newValue, ordering: .relaxed) }
    }
    /// Called after every write, before its reply is sent, with the number of documents held:
    /// crash tests use it to kill a client at an exact point of its sync. (The write commits
    /// with its batch at the next fsync round, whatever becomes of the client.)
    public var afterCommit: (@Sendable (_ documents: Int) -> Void)? {
        get { stateLocked { commitHook } }
        set { stateLocked { commitHook = newValue } }
    }
    private var commitHook: (@Sendable (Int) -> Void)?
    /// Called after each page of the change feed is made, before it is sent, with the number of
    /// pages served so far: crash tests use it to kill a device mid-pull.
    public var afterFeedPage: (@Sendable (_ pages: Int) -> Void)? {
        get { stateLocked { feedHook } }
        set { stateLocked { feedHook = newValue } }
    }
    var feedHook: (@Sendable (Int) -> Void)?
    var feedPages = 0
    let store: any ServerStore
    let registry: FormRegistry
    let recordTypes: RecordRegistry
    let now: @Sendable () -> Int64
    let tokenLifetimeMilliseconds: Int64
    let workspace: String?
    /// Guards the hooks and counters above (never held across a store call).
    private let stateLock = NSLock()
    private let log = Mutex(RequestLog())
    let accessTokens = AccessTokenCache()
    /// Bounds on resumable uploads; set before `start`.
    public var uploadLimits = UploadLimits()
    private var http: HTTPServer?
    /// Handler threads (set before `start`): writes waiting for the same fsync share it, so
    /// up to this many concurrent writes group-commit.
    package var workers = 4
    /// Open connections at most (see `HTTPServer.Limits`); set before `start`.
    package var maxConnections = HTTPServer.Limits().maxConnections
    /// Seconds a connection may sit idle before it is closed (see `HTTPServer.Limits`); set
    /// before `start`.
    package var idleTimeout = HTTPServer.Limits().idleTimeout
    /// The connections its HTTP server holds open now (tests wait for a crowd to be seen).
    package var openConnections: Int { http?.connectionCount ?? 0 }
    /// Whether writes share fsyncs (set before `start`); off, each write commits FULL alone.
    package var groupCommit: Bool {
        get { store.groupCommit }
        set { store.groupCommit = newValue }
    }
    /// How many fsyncs of its log the group commit has run (benchmarks divide writes by it).
    package var fsyncCount: Int { store.fsyncCount }
    /// Nanoseconds those fsyncs took.
    package var fsyncNanoseconds: UInt64 { store.fsyncNanoseconds }
    /// The port it listens on, once started.
    public private(set) var port: UInt16 = 0

    /// - Parameters:
    ///   - directory: where the database (`server.sqlite`) and stored files live.
    ///   - forms: the generated form types it accepts (it runs their validators).
    ///   - workspace: the one workspace this server hosts; a request naming another in
    ///     `FormSync-Workspace` gets 421. Nil accepts any.
    ///   - now: the server's clock in milliseconds, injected for token expiry in tests.
    ///   - records: the generated record types it holds (it validates records with them and
    ///     scopes the change feed by their `scope:` field).
    public convenience init(
        directory: String, forms: [any FormPayload.Type], records: [any SyncRecord.Type] = [], tokenLifetimeSeconds: Int = 3600,
        workspace: String? = nil, now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
    ) throws {
        try self.init(
            directory: directory, registry: FormRegistry(forms), records: RecordRegistry(records),
            tokenLifetimeSeconds: tokenLifetimeSeconds,
            workspace: workspace, now: now)
    }

    /// A server for forms and records given as registries: generated (`FormRegistry(FormCatalog.forms)`)
    /// or interpreted from a folder of specs (`SpecInterpreter.registries`), on the embedded
    /// SQLite store in `directory`.
    public convenience init(
        directory: String, registry: FormRegistry, records: RecordRegistry, tokenLifetimeSeconds: Int = 3600,
        workspace: String? = nil, now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
    ) throws {
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: SQLiteServerStore.ownerOnlyFolder)
        try self.init(
            store: try SQLiteServerStore(directory: directory, now: now()), registry: registry, records: records,
            tokenLifetimeSeconds: tokenLifetimeSeconds,
            workspace: workspace, now: now)
    }

    /// A server on `store`: the embedded SQLite store, or a PostgreSQL store that other
    /// server processes share (`FormSyncPostgres`).
    package init(
        store: any ServerStore, registry: FormRegistry, records: RecordRegistry, tokenLifetimeSeconds: Int = 3600,
        workspace: String? = nil, now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
    ) throws {
        self.workspace = workspace
        recordTypes = records
        self.store = store
        // Uploads abandoned while the server was down expire now, not at the next create.
        try store.exclusive {
            _ = try store.expireUploads(
                before: now().addingReportingOverflow(-UploadLimits().expiryMilliseconds).partialValue, limit: 10_000)
        }
        self.registry = registry
        self.now = now
        tokenLifetimeMilliseconds = Int64(tokenLifetimeSeconds) * 1000
        // Records written before the store listed the files each names get their list now.
        try store.exclusive { try store.indexRecordFiles { _, record in Self.fileIDs(ofRecord: record.type, record.payload, in: records) } }
    }

    /// The forms it accepts, by name, with their current versions.
    public var acceptedForms: [(name: String, version: Int)] {
        registry.names.compactMap { name in registry[name].map { (name, $0.version) } }
    }
    /// The record types it holds.
    public var recordTypeNames: [String] { recordTypes.names }

    /// Serves on `host`:`port` (127.0.0.1 by default; 0.0.0.0 for a load balancer on another
    /// machine; port 0 picks a free one) and returns the port.
    public func start(host: String = "127.0.0.1", port: UInt16 = 0) throws -> UInt16 {
        var limits = HTTPServer.Limits()
        limits.workers = workers
        limits.maxConnections = maxConnections
        limits.idleTimeout = idleTimeout
        let server = HTTPServer(
            limits: limits, preflight: { [self] head in preflight(head) }, receiveRate: { [faults] in faults.bandwidth },
            deferred: { [self] request, reply in handle(request, reply: reply) })
        self.port = try server.start(host: host, port: port)
        http = server
        return self.port
    }

    /// Stops listening and closes every connection.
    public func stop() {
        http?.stop()
        http = nil
        // Writes whose replies were never sent: committed now rather than rolled back at close.
        store.flush()
    }

    /// Where clients reach it.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    // MARK: Tokens

    /// Expires every access token now, as if they had all aged out.
    public func expireAccessTokens() {
        store.exclusive { store.expireAccessTokens(at: now()) }
        accessTokens.removeAll()
    }

    // MARK: What the server holds

    /// Every document it holds, in creation order.
    public func documents() -> [Document] { locked { store.documents() } }
    /// The document with this identity.
    public func document(_ documentID: String) -> Document? { locked { store.document(documentID) } }
    /// The ids of every stored file.
    public func fileIDs() -> [Int64] { locked { store.fileIDs() } }
    /// A stored file's bytes.
    public func fileBytes(_ id: Int64) -> Data? { locked { store.fileBytes(id) } }
    /// The requests it saw, in arrival order: the last `requestLogCapacity` of them, and no
    /// more than `requestLogByteBudget` bytes of their text.
    public func requestLog() -> [LoggedRequest] { log.withLock { Array($0.entries[$0.head...]) } }

    /// How many requests the log keeps (a ring: the oldest go first).
    public static let requestLogCapacity = 10_000
    /// How many bytes of text (paths, keys, document ids, workspaces) the log keeps at most.
    public static let requestLogByteBudget = 2 << 20
    /// The most bytes of each text a logged request keeps (a longer one is cut, marked by `…`).
    static let requestLogFieldBytes = 160

    /// Bytes of text the log holds now.
    package var requestLogBytes: Int { log.withLock { $0.bytes } }

    struct RequestLog {
        var entries: [LoggedRequest] = []
        /// Entries before it are dropped (compacted in batches).
        var head = 0
        var bytes = 0
    }

    private func record(_ entry: LoggedRequest) {
        var entry = entry
        entry.method = Self.clipped(entry.method)!
        entry.path = Self.clipped(entry.path)!
        entry.idempotencyKey = Self.clipped(entry.idempotencyKey)
        entry.documentID = Self.clipped(entry.documentID)
        entry.workspace = Self.clipped(entry.workspace)
        let size = Self.textBytes(entry)
        log.withLock { log in
            log.entries.append(entry)
            log.bytes += size
            while log.entries.count - log.head > Self.requestLogCapacity || log.bytes > Self.requestLogByteBudget {
                log.bytes -= Self.textBytes(log.entries[log.head])
                log.head += 1
            }
            if log.head >= 1024 && log.head * 2 >= log.entries.count {
                log.entries.removeFirst(log.head)
                log.head = 0
            }
        }
    }

    private static func clipped(_ text: String?) -> String? {
        guard let text, text.utf8.count > requestLogFieldBytes else { return text }
        return String(decoding: text.utf8.prefix(requestLogFieldBytes - 3), as: UTF8.self) + "…"
    }

    private static func textBytes(_ entry: LoggedRequest) -> Int {
        entry.method.utf8.count + entry.path.utf8.count + (entry.idempotencyKey?.utf8.count ?? 0) + (entry.documentID?.utf8.count ?? 0)
            + (entry.workspace?.utf8.count ?? 0)
    }

    /// Runs `body` as one unit of work on the store (see `ServerStore.exclusive`).
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        try store.exclusive(body)
    }

    func stateLocked<T>(_ body: () throws -> T) rethrows -> T {
        stateLock.lock()
        defer { stateLock.unlock() }
        return try body()
    }

    // MARK: Handling

    /// Answers one request as the HTTP server would (nil: the connection is closed without a
    /// reply). `formsync-lab torture sim` calls it in-process, under its model of the network.
    package func handle(_ request: HTTPRequest) -> HTTPResponse? {
        let answer = Mutex<HTTPResponse??>(nil)
        let answered = DispatchSemaphore(value: 0)
        handle(request) { response in
            answer.withLock { $0 = .some(response) }
            answered.signal()
        }
        answered.wait()
        // In process, a streamed body (a stored file) is handed over whole.
        let reply = answer.withLock { $0 } ?? nil
        guard let response = reply, response.stream != nil else { return reply }
        do {
            return try response.materialized()
        } catch {
            return failure(error, "file error")
        }
    }

    /// Answers one request through `reply`, called once its answer and everything it read or
    /// wrote is on disk: by this thread, or by the one whose fsync covers it (group commit).
    package func handle(_ request: HTTPRequest, reply: @escaping @Sendable (HTTPResponse?) -> Void) {
        let matched = Route.match(method: request.method, path: request.path)
        let route = FaultPlan.Route(matched, method: request.method)
        let entry = LoggedRequest(
            method: request.method, path: request.path, idempotencyKey: request.header("idempotency-key"),
            documentID: request.header("formsync-document"), workspace: request.header("formsync-workspace"), status: nil, replayed: false,
            bodyBytes: request.body.count)
        if faults.isOutage {
            record(entry)
            return reply(nil)
        }
        let fault = faults.next(for: route)
        let mark = store.durabilityMark()
        var answer = respond(request, matched, route: route, fault: fault)
        // What this server supports, on every reply of its own (a portal's page has none).
        if fault != .captivePortal { answer?.headers.append(("FormSync-Features", features.joined(separator: ", "))) }
        let response = answer
        // Nothing is answered before what it saw or wrote is on disk: on SQLite one fsync covers
        // every request that committed meanwhile (group commit; see `SQLiteServerStore`).
        store.whenDurable(since: mark) { [self, entry] failure in
            var entry = entry
            var response = response
            switch failure {
            case .notDurable(let reason):
                FileHandle.standardError.write(Data("formsync server: \(reason)\n".utf8))
                response = .problem(.internal, detail: "the server could not make its database durable")
            case .lost:
                response = .problem(.internal, detail: "the server could not commit this write")
            case nil:
                break
            }
            if fault == .dropAfterCommit { response = nil }  // whatever happened, the reply is lost
            entry.status = response?.status
            entry.replayed = response?.headers.contains { $0.0 == "Idempotent-Replayed" } ?? false
            record(entry)
            reply(response)
        }
    }

    private func respond(_ request: HTTPRequest, _ matched: Route?, route: FaultPlan.Route, fault: FaultPlan.Fault?) -> HTTPResponse? {
        switch fault {
        case .captivePortal:
            return HTTPResponse(
                status: 200, headers: [("Content-Type", "text/html")],
                body: Data("<html><body><h1>Welcome to FuelStop Wi-Fi</h1><form>Log in to continue</form></body></html>".utf8))
        case .unavailable(let seconds):
            return .problem(.busy, detail: "try again later", headers: [("Retry-After", String(seconds))])
        case .tooManyRequests(let seconds):
            return .problem(.rateLimited, detail: "slow down", headers: [("Retry-After", String(seconds))])
        case .unauthorized:
            return .problem(.badToken, detail: "the token expired", headers: [("WWW-Authenticate", "Bearer")])
        case .delay(let milliseconds) where route == .append:
            // An append has no ledger entry to hold it in: it is held before it is read.
            faults.holding { Thread.sleep(forTimeInterval: Double(milliseconds) / 1000) }
        case .hold where route == .append:
            faults.holding { faults.waitForRelease() }
        default:
            break
        }
        if let refusal = misdirected(request) { return refusal }
        guard let matched else {
            if Route.isFixedPath(request.path) {
                return .problem(.methodNotAllowed, detail: "\(request.method) is not a method of \(request.path)")
            }
            return .problem(.noRoute, detail: "no route for \(request.method) \(request.path)")
        }
        switch matched {
        case .health:
            return .json(200, ["service": "formsync", "status": "ok", "protocol": 1, "features": features])
        case .fileLookup where offersFileLookup:
            return fileLookup(request)
        case .fileLookup, .fileFetch:
            return fileDownload(request)
        case .pendingFiles:
            return pendingFilesRoute(request)
        case .refresh:
            return refresh(request)
        case .changes:
            return changes(request)
        case .record:
            return recordRoute(request)
        case .document:
            return documentRoute(request)
        case .fileUpload:
            return write(
                request, fault: fault, prepare: { SHA256.hash(request.body) },
                perform: { try self.storeFile(request, digest: $0, caller: $1) })
        case .uploadCreate:
            return createUpload(request)
        case .uploadOffset:
            return uploadOffset(request)
        case .uploadAppend:
            return appendUpload(request)
        case .submission:
            return write(
                request, fault: fault, prepare: { checkSubmission(request) }, perform: { try self.submit(request, $0, caller: $1) })
        }
    }

    // MARK: Before the body

    /// The largest submission body (JSON) the server reads.
    public static let maxSubmissionBytes = 1 << 20
    /// The largest file upload it reads.
    public static let maxFileBytes = 64 << 20

    /// Decides from the head alone: the route's body limit, and for writes the token and the
    /// protocol headers, so that nothing is read from a request that will be refused. (While a
    /// fault is planned, the faults come first, as a network in front of the server would.)
    func preflight(_ head: HTTPRequest) -> HTTPServer.Preflight {
        let route = Route.match(method: head.method, path: head.path)
        let limit: Int
        switch route?.body ?? Route.Body.none {
        case .token: limit = 4096
        case .payload: limit = Self.maxSubmissionBytes
        case .file: limit = Self.maxFileBytes
        case .none: limit = 0
        }
        if route == .uploadAppend, faults.isEmpty, !faults.isOutage, case .refused(let refusal) = caller(of: head) {
            return .refuse(refusal)
        }
        guard route == .submission || route == .fileUpload, faults.isEmpty, !faults.isOutage else {
            return .read(maxBodyBytes: limit)
        }
        if case .refused(let refusal) = caller(of: head) { return .refuse(refusal) }
        if let refusal = badProtocolHeaders(head) { return .refuse(refusal) }
        return .read(maxBodyBytes: limit)
    }

    /// The syntax of `Idempotency-Key`, `FormSync-Document` and `FormSync-Workspace`
    /// (docs/PROTOCOL.md): 1 to 128 characters from `A–Z a–z 0–9 - . _ ~ :`.
    static func isIdentifier(_ value: String?) -> Bool {
        guard let value, (1...128).contains(value.utf8.count) else { return false }
        return value.utf8.allSatisfy { byte in
            switch byte {
            case 48...57, 65...90, 97...122, 45, 46, 95, 126, 58: return true
            default: return false
            }
        }
    }

    private func badProtocolHeaders(_ request: HTTPRequest) -> HTTPResponse? {
        guard Self.isIdentifier(request.header("idempotency-key")) else {
            return .problem(.badIdempotencyKey, detail: "Idempotency-Key is required: 1 to 128 characters from A-Z a-z 0-9 - . _ ~ :")
        }
        guard Self.isIdentifier(request.header("formsync-document")) else {
            return .problem(.badDocumentID, detail: "FormSync-Document is required: 1 to 128 characters from A-Z a-z 0-9 - . _ ~ :")
        }
        if let workspace = request.header("formsync-workspace"), !Self.isIdentifier(workspace) {
            return .problem(.badWorkspace, detail: "FormSync-Workspace: 1 to 128 characters from A-Z a-z 0-9 - . _ ~ :")
        }
        if let ifMatch = request.header("if-match"), Self.entityTags(ifMatch) == nil {
            return .problem(.badIfMatch, detail: "If-Match must be * or a list of entity tags (RFC 9110 §13.1.1)")
        }
        return nil
    }

    /// `If-Match` (docs/PROTOCOL.md, §1): `*` (nil tags) or a comma-separated list of entity tags,
    /// strong `"x"` or weak `W/"x"`; nil for anything else.
    static func entityTags(_ header: String) -> (any: Bool, strong: [String])? {
        let text = header.trimmingOWS
        if text == "*" { return (true, []) }
        var strong: [String] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            var tag = item.trimmingOWS
            let weak = tag.hasPrefix("W/")
            if weak { tag.removeFirst(2) }
            guard tag.count >= 2, tag.hasPrefix("\""), tag.hasSuffix("\""),
                tag.dropFirst().dropLast().utf8.allSatisfy({ $0 == 0x21 || (0x23...0x7E).contains($0) || $0 >= 0x80 })
            else { return nil }
            if !weak { strong.append(String(tag)) }
        }
        return (false, strong)
    }

    private func refresh(_ request: HTTPRequest) -> HTTPResponse {
        guard let object = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any],
            let refreshToken = object["refresh_token"] as? String
        else { return .problem(.malformed, detail: "send {\"refresh_token\": \"…\"}") }
        return locked {
            let stored: StoredGrant?
            do {
                stored = refreshToken.utf8.count <= 512 ? try store.grant(ofToken: refreshToken, kind: "refresh") : nil
            } catch {
                return Self.storeUnavailable()
            }
            guard let found = stored, found.expiresAt > now() else {
                return .problem(.badToken, detail: "unknown refresh token")
            }
            guard let token = try? issueAccessTokenLocked(found.grant) else {
                return .problem(.internal, detail: "the server could not store the token")
            }
            return .json(200, ["access_token": token, "token_type": "Bearer", "expires_in": tokenLifetimeMilliseconds / 1000])
        }
    }

    /// The ledger around a write: a replay returns the recorded reply, the same key with
    /// another payload is 422, a key still in flight is 409; the write and its recorded reply
    /// commit together. `prepare` runs outside the lock and the transaction: the work
    /// that depends on the request alone (decoding, validating, hashing), so that concurrent writers
    /// hold the lock only for what touches the store. (A replay's is wasted, and it is rare.)
    private func write<P>(
        _ request: HTTPRequest, fault: FaultPlan.Fault?, prepare: () -> P, perform process: @escaping (P, Caller) throws -> HTTPResponse
    ) -> HTTPResponse? {
        let caller: Caller
        switch self.caller(of: request) {
        case .allowed(let found): caller = found
        case .refused(let refusal): return refusal
        }
        if let refusal = badProtocolHeaders(request) { return refusal }
        let document = request.header("formsync-document")!
        // Keys are scoped to (workspace, principal): another device's key is another key.
        let key = "\(caller.workspace)\u{1F}\(caller.principal)\u{1F}\(request.header("idempotency-key")!)"
        var fingerprint = SHA256()
        fingerprint.update(
            Data(
                "\(request.method) \(request.path)\n\(request.header("formsync-form") ?? "")\n\(request.header("if-match") ?? "")\n\(document)\n"
                    .utf8))
        fingerprint.update(request.body)
        let hash = fingerprint.finalize()
        let faults = self.faults
        let hold: (() -> Void)? =
            switch fault {
            case .delay(let milliseconds): { faults.holding { Thread.sleep(forTimeInterval: Double(milliseconds) / 1000) } }
            case .hold: { faults.holding { faults.waitForRelease() } }
            default: nil
            }
        let prepared = prepare()
        let outcome: LedgerOutcome
        do {
            outcome = try store.idempotentWrite(key: key, hash: hash, hold: hold, now: now()) {
                let response = try process(prepared, caller)
                return RecordedReply(status: response.status, headers: response.headers, body: response.body)
            }
        } catch {
            return failure(error)
        }
        switch outcome {
        case .processed(let reply):
            if let hook = stateLocked({ commitHook }) { hook(locked { store.documentCount() }) }
            return HTTPResponse(status: reply.status, headers: reply.headers, body: reply.body)
        case .recorded(let recordedHash, _) where recordedHash != hash:
            return .problem(.keyReused, detail: "this Idempotency-Key was used with a different request")
        case .recorded(_, let replay):
            return HTTPResponse(status: replay.status, headers: replay.headers + [("Idempotent-Replayed", "true")], body: replay.body)
        case .inFlight:
            return .problem(
                .keyInFlight, detail: "a request with this Idempotency-Key is still being processed",
                headers: [("Retry-After", "1")])
        }
    }

    /// A submission as far as it can be checked without the store: its form, its payload
    /// upgraded, validated and canonical, or the reply that refuses it.
    enum CheckedSubmission {
        case refused(HTTPResponse)
        case failed(any Error)
        case accepted(name: String, entry: FormRegistry.Entry, canonical: (payload: Data, endpoint: String), files: [FileUse])
    }

    /// The part of `submit` that depends on the request alone; runs outside the lock.
    func checkSubmission(_ request: HTTPRequest) -> CheckedSubmission {
        guard let formHeader = request.header("formsync-form"), let (name, version) = Self.parseForm(formHeader) else {
            return .refused(.problem(.badFormHeader, detail: "FormSync-Form: Name; version=N is required"))
        }
        guard let entry = registry[name] else {
            return .refused(.problem(.unknownForm, detail: "this server does not accept form \(name)"))
        }
        // Every older version is accepted and brought to the current one by the spec's
        // upgraders before anything is checked; a future version is refused in words.
        guard version <= entry.version else {
            return .refused(
                .problem(
                    .unknownFormVersion,
                    detail: "form \(name) is at version \(entry.version) here; version \(version) is newer than this server knows"))
        }
        guard version >= 1, let body = try? entry.upgrade(request.body, from: version) else {
            return .refused(
                .problem(
                    .invalidPayload, detail: "a version \(version) payload of \(name) cannot be brought to version \(entry.version)",
                    errors: [["pointer": "#", "code": "upgrade", "detail": "the payload could not be upgraded"]]))
        }
        let admission: FormRegistry.Entry.Admission
        let files: [FileUse]
        do {
            // One decoding for the rules, the placeholders, the canonical bytes and the files. The
            // clock is unknown: a constraint reading today() or now() is the device's to check.
            (admission, files) = try FormClock.$current.withValue(.unknown) { try FileUse.gathering { try entry.admit(body) } }
        } catch {
            return .failed(error)
        }
        switch admission {
        case .invalid(let errors):
            let upgraded = version < entry.version ? " (after upgrading it from version \(version))" : ""
            return .refused(
                .problem(
                    .invalidPayload, detail: "the payload breaks \(errors.count) rule(s)\(upgraded)",
                    errors: errors.map { ["pointer": $0.pointer, "code": $0.code, "detail": $0.detail] }))
        case .holdsPlaceholders(let placeholders):
            return .refused(
                .problem(
                    .placeholder,
                    detail: "the payload still holds placeholder ids \(placeholders); upload the files and create the records first",
                    errors: [
                        [
                            "pointer": "#", "code": ProblemCode.placeholder.rawValue,
                            "detail": "placeholder ids must be replaced by server ids",
                        ]
                    ]))
        case .admitted(let payload, let endpoint):
            guard endpoint == request.path else {
                return .refused(
                    .problem(.wrongPath, detail: "the payload belongs at \(endpoint), not \(request.path)"))
            }
            return .accepted(name: name, entry: entry, canonical: (payload, endpoint), files: files)
        }
    }

    /// Creates or edits a document, with its files checked against what is stored and its
    /// pending files noted. Runs inside the ledger's transaction.
    private func submit(_ request: HTTPRequest, _ checked: CheckedSubmission, caller: Caller) throws -> HTTPResponse {
        let documentID = request.header("formsync-document")!
        let (name, entry, files): (String, FormRegistry.Entry, [FileUse])
        var canonical: (payload: Data, endpoint: String)
        switch checked {
        case .refused(let response): return response
        case .failed(let error): throw error
        case .accepted(let n, let e, let c, let f): (name, entry, canonical, files) = (n, e, c, f)
        }
        if let refusal = boundElsewhere(documentID, form: name, caller: caller) { return refusal }
        let pending: [FileUse]
        switch try checkFiles(files, payload: canonical.payload, caller: caller) {
        case .refused(let refusal): return refusal
        case .checked(let payload, let waiting): (canonical.payload, pending) = (payload, waiting)
        }
        let response = try write(request, name: name, entry: entry, canonical: canonical, caller: caller)
        if (200..<300).contains(response.status), store.document(documentID) != nil {
            var record: (type: String, id: Int64)?
            if let action = entry.recordAction {
                if action.kind == .creates, let document = store.document(documentID) {
                    record = (action.recordType, document.id)
                } else if action.kind == .edits, let id = RecordProjection.editedID(form: canonical.payload, action: action) {
                    record = (action.recordType, id)
                }
            }
            try notePendingFiles(pending, documentID: documentID, caller: caller, record: record)
        }
        return response
    }

    /// `submit`'s write, once its files are checked.
    private func write(
        _ request: HTTPRequest, name: String, entry: FormRegistry.Entry, canonical: (payload: Data, endpoint: String), caller: Caller
    ) throws -> HTTPResponse {
        let documentID = request.header("formsync-document")!
        let workspace = caller.workspace
        let ifMatch = request.header("if-match").flatMap(Self.entityTags)
        if let action = entry.recordAction, action.kind == .edits {
            return try submitEdit(request, entry: entry, action: action, payload: canonical.payload, caller: caller, ifMatch: ifMatch)
        }
        var createdRecord: (type: String, payload: Data, scope: String)?
        if let action = entry.recordAction, action.kind == .creates {
            switch prepareRecord(action.recordType, payload: try RecordProjection.apply(form: canonical.payload, to: nil, action: action)) {
            case .success(let prepared): createdRecord = (action.recordType, prepared.payload, prepared.scope)
            case .failure(let refusal): if store.document(documentID) == nil { return refusal.response }
            }
        }
        if let existing = store.document(documentID) {
            guard let ifMatch else {
                // A create for a document already held: the same record is an idempotent repeat;
                // a different one must not be dropped silently, nor applied blindly.
                let stored = try entry.remap(existing.payload, [:]).payload
                if stored == canonical.payload {
                    return recordResponse(existing, status: 200, entity: try entity(entry, id: existing.id, workspace: workspace))
                }
                return recordResponse(
                    existing, status: 409, code: .documentExists,
                    detail: "document \(documentID) already exists with other content; edit it with If-Match")
            }
            guard ifMatch.any || ifMatch.strong.contains(Self.etag(existing.version)) else {
                return recordResponse(existing, status: 412, code: .staleVersion)
            }
            // An edit: the server's own value stands for every field it is the authority of, and
            // an edit that tried to change one is a conflict for a person (as for a record's
            // edit), never a 200 that keeps the server's value while the device shows its own.
            let stored = existing.payload
            let merge = try entry.merge(stored, canonical.payload, stored)
            if !merge.conflicts.isEmpty {
                return recordResponse(
                    existing, status: 409, code: .authorityConflict,
                    detail: "the edit changes \(merge.conflicts.map(\.pointer).joined(separator: ", ")), which the server owns")
            }
            let merged = merge.merged
            // A document that created a record edits the record too.
            var entity: [String: Any]?
            if let action = entry.recordAction, action.kind == .creates,
                let current = try store.record(workspace: workspace, type: action.recordType, id: existing.id)
            {
                switch prepareRecord(
                    action.recordType, payload: try RecordProjection.apply(form: merged, to: current.payload, action: action))
                {
                case .success(let prepared):
                    let version = try store.putRecord(
                        workspace: workspace, type: action.recordType, id: existing.id, scope: prepared.scope, payload: prepared.payload,
                        files: fileIDs(ofRecord: action.recordType, prepared.payload), at: now())
                    entity = Self.entityObject(type: action.recordType, id: existing.id, version: version, payload: prepared.payload)
                case .failure(let refusal):
                    return refusal.response
                }
            }
            let updated = try store.updateDocument(documentID, payload: merged, countingWrite: true, at: now())
            return recordResponse(updated, status: 200, entity: entity)
        }
        if ifMatch != nil {
            return .problem(.noSuchDocument, detail: "document \(documentID) does not exist; it cannot be edited")
        }
        let created = try store.createDocument(
            documentID, form: name, formVersion: entry.version, workspace: workspace, principal: caller.principal,
            payload: canonical.payload, at: now())
        var entity: [String: Any]?
        if let createdRecord {
            let version = try store.putRecord(
                workspace: workspace, type: createdRecord.type, id: created.id, scope: createdRecord.scope, payload: createdRecord.payload,
                files: fileIDs(ofRecord: createdRecord.type, createdRecord.payload), at: now())
            entity = Self.entityObject(type: createdRecord.type, id: created.id, version: version, payload: createdRecord.payload)
        }
        return recordResponse(created, status: 201, entity: entity)
    }

    /// Stores a file whose `digest` was computed outside the lock. Runs inside the ledger's transaction.
    func storeFile(_ request: HTTPRequest, digest: Data, caller: Caller) throws -> HTTPResponse {
        let documentID = request.header("formsync-document")!
        guard let header = request.header("content-digest"), let claimed = Self.parseDigest(header) else {
            return .problem(.digestMissing, detail: "Content-Digest: sha-256=:…: is required")
        }
        guard claimed == digest else {
            return .problem(.digestMismatch, detail: "Content-Digest does not match the bytes received")
        }
        if let refusal = boundElsewhere(documentID, form: nil, caller: caller) { return refusal }
        if try store.upload(document: documentID) != nil {
            return .problem(.documentExists, detail: "file document \(documentID) is a resumable upload; finish it at /uploads")
        }
        let contentType = request.header("content-type")
        let mediaType = MediaSignature.mediaType(of: request.body) ?? ""
        if try store.file(document: documentID) == nil,
            let refusal = try refusalByPendingFiles(
                workspace: caller.workspace, principal: caller.principal, digest: digest, byteCount: Int64(request.body.count),
                contentType: contentType, mediaType: mediaType)
        {
            return refusal
        }
        let (id, created, sameBytes) = try store.storeFile(
            documentID, workspace: caller.workspace, principal: caller.principal, bytes: request.body, digest: digest,
            contentType: contentType, mediaType: mediaType, at: now())
        guard sameBytes else {
            return .problem(.documentExists, detail: "file document \(documentID) already holds other bytes", extra: ["id": id])
        }
        if created {
            try completePendingFiles(
                workspace: caller.workspace, digest: digest, fileID: id, byteCount: Int64(request.body.count), contentType: contentType,
                mediaType: mediaType)
        }
        return .json(
            created ? 201 : 200,
            [
                Acknowledgement.documentID: documentID, Acknowledgement.id: id, Acknowledgement.byteCount: request.body.count,
                "digest": "sha-256=:\(digest.base64EncodedString()):",
            ])
    }

    /// A refusal when `documentID` already belongs to another workspace, another principal
    /// (unless the caller is the back office) or another form (a file when `form` is nil): a
    /// document id is bound to all three for good. The workspace is checked first and the form
    /// last, so that nobody learns anything of a document that is not theirs.
    func boundElsewhere(_ documentID: String, form: String?, caller: Caller) -> HTTPResponse? {
        guard let owner = store.owner(of: documentID) else { return nil }
        if owner.workspace != caller.workspace {
            return .problem(.documentWorkspaceMismatch, detail: "document \(documentID) belongs to another workspace")
        }
        if !caller.owns(owner.principal) {
            return .problem(.documentPrincipalMismatch, detail: "document \(documentID) belongs to another principal")
        }
        if owner.form != form {
            return .problem(
                .documentFormMismatch,
                detail: "document \(documentID) belongs to \(owner.form ?? "a file upload"), not \(form ?? "a file upload")")
        }
        return nil
    }

    /// `GET /documents/{id}`: a document of the caller's workspace that the caller may read.
    private func documentRoute(_ request: HTTPRequest) -> HTTPResponse {
        let caller: Caller
        switch self.caller(of: request) {
        case .allowed(let found): caller = found
        case .refused(let refusal): return refusal
        }
        let id = String(request.path.dropFirst("/documents/".count))
        return locked {
            guard Self.isIdentifier(id), let owner = store.owner(of: id), owner.form != nil, owner.workspace == caller.workspace,
                caller.owns(owner.principal),
                let document = store.document(id)
            else { return .problem(.noSuchDocument, detail: "no document \(id) here") }
            return recordResponse(document, status: 200)
        }
    }

    func recordResponse(
        _ document: Document, status: Int, code: ProblemCode? = nil, detail: String? = nil, entity: [String: Any]? = nil
    ) -> HTTPResponse {
        let headers = [("ETag", Self.etag(document.version)), ("Location", "/documents/\(document.documentID)")]
        if code == nil, entity == nil, document.payload.first == UInt8(ascii: "{") {
            // The common reply, written around the stored payload's bytes (canonical JSON from
            // the form's encoder) rather than parsed and serialised again under the lock.
            typealias A = Acknowledgement
            var body = Data(
                "{\"\(A.documentID)\":\(Self.jsonString(document.documentID)),\"\(A.form)\":\(Self.jsonString(document.form)),".utf8)
            body.append(Data("\"\(A.formVersion)\":\(document.formVersion),\"\(A.id)\":\(document.id),\"\(A.record)\":".utf8))
            body.append(document.payload)
            body.append(Data(",\"\(A.version)\":\(Self.jsonString(Self.etag(document.version)))}".utf8))
            return HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: body)
        }
        let record = (try? JSONSerialization.jsonObject(with: document.payload)) ?? [:]
        var object: [String: Any] = [
            Acknowledgement.documentID: document.documentID, Acknowledgement.id: document.id, Acknowledgement.form: document.form,
            Acknowledgement.formVersion: document.formVersion, Acknowledgement.version: Self.etag(document.version),
            Acknowledgement.record: record,
        ]
        if let entity { object[Acknowledgement.entity] = entity }
        guard let code else { return .json(status, object, headers: headers) }
        object[Acknowledgement.record] = nil
        return .problem(code, detail: detail, extra: object.merging([Acknowledgement.record: record]) { a, _ in a }, headers: headers)
    }

    static func etag(_ version: Int) -> String { "\"\(version)\"" }

    /// `value` as a JSON string, escaped as every stored payload is (`JSONOutput`).
    static func jsonString(_ value: String) -> String {
        var out = JSONOutput(capacity: value.utf8.count + 2)
        out.string(value)
        return String(decoding: out.bytes, as: UTF8.self)
    }

    /// `DeliveryConfirmation; version=3`.
    static func parseForm(_ header: String) -> (String, Int)? {
        let parts = header.split(separator: ";").map(\.trimmingOWS)
        guard parts.count == 2, parts[1].hasPrefix("version="), let version = Int(parts[1].dropFirst("version=".count)) else { return nil }
        return (String(parts[0]), version)
    }

    /// `sha-256=:base64:` (docs/PROTOCOL.md, "Standards").
    static func parseDigest(_ header: String) -> Data? {
        for item in header.split(separator: ",") {
            let text = item.trimmingOWS
            guard text.hasPrefix("sha-256=:"), text.hasSuffix(":"), text.count > 10 else { continue }
            return Data(base64Encoded: String(text.dropFirst("sha-256=:".count).dropLast()))
        }
        return nil
    }
}

extension SyncServer {
    /// The embedded store, for tests that reach into it (a server on PostgreSQL has none).
    var sqliteStore: SQLiteServerStore { store as! SQLiteServerStore }
}
