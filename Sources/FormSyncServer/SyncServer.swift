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
    public let faults: FaultPlan
    /// What every part of the server shares (`ServerContext`).
    let context: ServerContext
    /// Its webhook deliveries: a pass now (`deliver()`), or in the background (`start()`).
    public let webhooks: WebhookRunner
    package let feedWaiters: FeedWaiters
    var store: any ServerStore { context.store }
    var accessTokens: AccessTokenCache { context.accessTokens }
    private var settings: ServerSettings { context.settings }
    /// Whether it answers `GET /files/sha-256/<hex>` (on by default); off, the route is unknown
    /// (404 no-route), as on a server without the feature (the benchmark's baseline).
    package var offersFileLookup: Bool {
        get { settings.offersFileLookup }
        set { settings.offersFileLookup = newValue }
    }
    /// Whether it takes submissions that name files by digest before their bytes (on by
    /// default). Off, it answers as a server without the feature would: `deferred-files` is not
    /// announced and a pending file is refused with `422`, so that clients fall back to
    /// sending files first (tests and `serve --no-deferred-files`).
    public var acceptsDeferredFiles: Bool {
        get { settings.acceptsDeferredFiles }
        set { settings.acceptsDeferredFiles = newValue }
    }
    /// Called after every write, before its reply is sent, with the number of documents held:
    /// crash tests use it to kill a client at an exact point of its sync. (The write commits
    /// with its batch at the next fsync round, whatever becomes of the client.)
    public var afterCommit: (@Sendable (_ documents: Int) -> Void)? {
        get { settings.afterCommit }
        set { settings.afterCommit = newValue }
    }
    /// Called after each page of the change feed is made, before it is sent, with the number of
    /// pages served so far: crash tests use it to kill a device mid-pull.
    public var afterFeedPage: (@Sendable (_ pages: Int) -> Void)? {
        get { settings.afterFeedPage }
        set { settings.afterFeedPage = newValue }
    }
    /// Bounds on resumable uploads.
    public var uploadLimits: UploadLimits {
        get { settings.uploadLimits }
        set { settings.uploadLimits = newValue }
    }
    private let log = Mutex(RequestLog())
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
        let faults = FaultPlan()
        self.faults = faults
        context = ServerContext(
            store: store, registry: registry, recordTypes: records, now: now, workspace: workspace,
            tokenLifetimeMilliseconds: WireSyntax.milliseconds(seconds: tokenLifetimeSeconds),
            accessTokens: AccessTokenCache(), faults: faults, settings: ServerSettings())
        webhooks = WebhookRunner(context: context)
        feedWaiters = FeedWaiters(context: context)
        // Uploads abandoned while the server was down expire now, not at the next create.
        try store.exclusive {
            _ = try store.expireUploads(
                before: now().addingReportingOverflow(-UploadLimits().expiryMilliseconds).partialValue, limit: 10_000)
        }
        // Records written before the store listed the files each names get their list now.
        try store.exclusive {
            try store.indexRecordFiles { _, record in FileService.fileIDs(ofRecord: record.type, record.payload, in: records) }
        }
    }

    /// The forms it accepts, by name, with their current versions.
    public var acceptedForms: [(name: String, version: Int)] {
        context.registry.names.compactMap { name in context.registry[name].map { (name, $0.version) } }
    }
    /// The record types it holds.
    public var recordTypeNames: [String] { context.recordTypes.names }

    /// Serves on `host`:`port` (127.0.0.1 by default; 0.0.0.0 for a load balancer on another
    /// machine; port 0 picks a free one) and returns the port.
    public func start(host: String = "127.0.0.1", port: UInt16 = 0) throws -> UInt16 {
        var limits = HTTPServer.Limits()
        limits.workers = workers
        limits.maxConnections = maxConnections
        limits.idleTimeout = idleTimeout
        let server = HTTPServer(
            limits: limits, preflight: { [router] head in router.preflight(head) }, receiveRate: { [faults] in faults.bandwidth },
            deferred: { [self] request, reply in handle(request, reply: reply) })
        self.port = try server.start(host: host, port: port)
        http = server
        feedWaiters.start { [weak self] request, reply in self?.handle(request, reply: reply) }
        return self.port
    }

    /// Stops listening and closes every connection.
    public func stop() {
        http?.stop()
        http = nil
        feedWaiters.stop()
        webhooks.stop()
        // Writes whose replies were never sent: committed now rather than rolled back at close.
        store.flush()
    }

    /// Where clients reach it.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    // MARK: What the server holds

    /// Every document it holds, in creation order.
    public func documents() -> [Document] { locked { store.documents() } }
    /// The document with this identity.
    public func document(_ documentID: String) -> Document? { locked { store.document(documentID) } }
    /// The principal whose request created a document (the harnesses check who sent what).
    package func documentOwner(_ documentID: String) -> String? { locked { store.owner(of: documentID)?.principal } }
    /// The ids of every stored file.
    public func fileIDs() -> [Int64] { locked { store.fileIDs() } }
    /// A stored file's bytes.
    public func fileBytes(_ id: Int64) -> Data? { locked { store.fileBytes(id) } }
    /// The requests it saw, in arrival order: the last `requestLogCapacity` of them, and no
    /// more than `requestLogByteBudget` bytes of their text.
    public func requestLog() -> [LoggedRequest] { log.withLock { $0.kept } }

    /// How many requests the log keeps (a ring: the oldest go first).
    public static let requestLogCapacity = 10_000
    /// How many bytes of text (paths, keys, document ids, workspaces) the log keeps at most.
    public static let requestLogByteBudget = 2 << 20
    /// The most bytes of each text a logged request keeps (a longer one is cut, marked by `…`).
    static let requestLogFieldBytes = 160

    /// Bytes of text the log holds now.
    package var requestLogBytes: Int { log.withLock { $0.bytes } }

    /// Runs `body` as one unit of work on the store (see `ServerStore.exclusive`).
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        try store.exclusive(body)
    }

    private var router: ServerRouter { ServerRouter(context: context) }

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
            return router.failure(error, "file error")
        }
    }

    /// Answers one request through `reply`, called once its answer and everything it read or
    /// wrote is on disk: by this thread, or by the one whose fsync covers it (group commit).
    package func handle(_ request: HTTPRequest, reply: @escaping @Sendable (HTTPResponse?) -> Void) {
        let matched = Route.match(method: request.method, path: request.path)
        let route = FaultPlan.Route(matched, method: request.method)
        let entry = LoggedRequest(
            method: request.method, path: request.path, idempotencyKey: request.header(ProtocolHeader.idempotencyKey),
            documentID: request.header(ProtocolHeader.document), workspace: request.header(ProtocolHeader.workspace), status: nil,
            replayed: false,
            bodyBytes: request.body.count)
        if faults.isOutage {
            log.withLock { $0.append(entry) }
            return reply(nil)
        }
        if matched == .changes, feedWaiters.hold(request, reply: reply) { return }  // answered when a change commits, or later
        let fault = faults.next(for: route)
        let mark = store.durabilityMark()
        var answer = router.respond(request, matched, route: route, fault: fault)
        // What this server supports, on every reply of its own (a portal's page has none).
        if fault != .captivePortal { answer?.headers.append((ProtocolHeader.features, settings.features.joined(separator: ", "))) }
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
            if request.method != "GET", request.method != "HEAD" { feedWaiters.changed(workspace: entry.workspace) }
            entry.status = response?.status
            entry.replayed = response?.headers.contains { $0.0 == ProtocolHeader.idempotentReplayed } ?? false
            log.withLock { $0.append(entry) }
            reply(response)
        }
    }

    /// The largest submission body (JSON) the server reads.
    public static let maxSubmissionBytes = 1 << 20
    /// The largest file upload it reads.
    public static let maxFileBytes = 64 << 20
}
