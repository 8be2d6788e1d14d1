import FormSyncModel
import Foundation

/// The durable outbox: every submission is committed to SQLite before anything else happens,
/// goes out in order within its lane and in parallel across lanes, is classified on every
/// reply, and leaves only when the server acknowledged it or a person discarded it.
///
/// It runs on its database's own thread, so every state transition (`ItemLifecycle`) is
/// serialised and committed before it is acted on. See README, "The outbox and the sync engine".
public actor Outbox {
    /// The file's owner: the writer, its thread, the group commit, the readers.
    nonisolated let database: OutboxDatabase
    /// The tables (`database.store`), used on the database's thread only.
    var store: OutboxStore { lifecycle.store }
    var stash: FileStash { lifecycle.stash }
    let registry: FormRegistry
    let transports: @Sendable (String) -> (any OutboxTransport)?
    /// The current workspace's transport, checked to serve that workspace.
    var transport: any OutboxTransport
    let environment: OutboxEnvironment
    let configuration: Configuration
    let refreshAuthentication: @Sendable () async -> Bool

    /// Mints placeholder ids for files and offline-created records, never repeating one this
    /// outbox has stored, even across restarts.
    public nonisolated let placeholderIDs: PlaceholderIDSource
    /// Who watches: events, snapshots and work signals, from any thread.
    nonisolated let observers: ObservationHub

    /// The device's records, as the app reads them (pulled, with unsent work on top); it
    /// shares this outbox's file and thread.
    public nonisolated let recordStore: RecordStore

    /// The items' states and every move between them, in this outbox's store.
    let lifecycle: ItemLifecycle

    /// The workspace (server + tenant) items are captured in and sent to.
    public var workspace: String { lifecycle.workspace }

    /// How enqueues become durable, alone or together.
    let groupCommit: GroupCommit
    /// How many `enqueue` calls are under way, counted before they queue on the actor (so an
    /// enqueue can tell whether others wait to share its fsync).
    nonisolated let enqueueCallers = CallerCount()
    /// The running flush pass, if any: which flush() calls it answers, and how many callers
    /// still wait for it (cancelled when none does).
    var pass: (id: Int, ticket: Int, task: Task<FlushReport, Never>)?
    var passWaiters: [Int: Int] = [:]
    var passCount = 0
    var flushRequests = 0
    /// Whether this launch asked the server what it supports (deferred files).
    var featuresAsked = false
    /// Stored files being fetched now, by workspace and id: a second caller waits for the first.
    var fetches: [String: Task<URL, any Error>] = [:]
    /// The files of pulled records kept here (`<path>.files`).
    let attachments: AttachmentCache
    /// `submit` calls waiting for their item's first answer.
    var waiters: [Int64: [CheckedContinuation<SubmitResult?, Never>]] = [:]

    /// Opens (or creates) the outbox database at `path`; its stash folder is `path + ".stash"`.
    /// Expired leases of a previous run return to pending here, keeping their attempt identity;
    /// partial stash copies left by a killed process are removed. A file that is not an outbox
    /// this build can use is refused (`OutboxError.notAnOutbox`) and never overwritten.
    ///
    /// - Parameters:
    ///   - transports: the transport of each workspace (nil for one the app cannot reach); an
    ///     item only ever goes out through its own workspace's transport.
    ///   - records: the record types the device pulls and queries (typically
    ///     `FormCatalog.records`).
    ///   - refreshAuthentication: the app's hook for an expired token; true when a new token
    ///     is in place.
    public init(
        path: String, workspace: String, forms: [any FormPayload.Type], records: [any SyncRecord.Type] = [],
        transports: @escaping @Sendable (String) -> (any OutboxTransport)?,
        configuration: Configuration = Configuration(), environment: OutboxEnvironment = .live,
        refreshAuthentication: @escaping @Sendable () async -> Bool = { false }
    ) throws {
        try self.init(
            path: path, workspace: workspace, registry: FormRegistry(forms), records: RecordRegistry(records), transports: transports,
            configuration: configuration, environment: environment, refreshAuthentication: refreshAuthentication)
    }

    /// An outbox over registries rather than generated types: what a build that runs specs
    /// through `SpecInterpreter` uses. Typed calls (`enqueue`, `records`) still need their
    /// generated types; sending, upgrading, merging and pulling need only the registries.
    public init(
        path: String, workspace: String, registry: FormRegistry, records: RecordRegistry,
        transports: @escaping @Sendable (String) -> (any OutboxTransport)?,
        configuration: Configuration = Configuration(), environment: OutboxEnvironment = .live,
        refreshAuthentication: @escaping @Sendable () async -> Bool = { false }
    ) throws {
        guard let transport = transports(workspace), transport.workspace == workspace else {
            throw OutboxError.noTransport(workspace: workspace)
        }
        let database = try OutboxDatabase(
            path: path, now: environment.now(), openFlags: configuration.fileProtection.sqliteOpenFlag, syncLog: environment.syncLog)
        let observers = ObservationHub()
        // The person signed in when the app last ran is still the one whose records it shows.
        let people = try OutboxDatabase.mapping { try database.storeWhileOpening.people() }
        let recordStore = RecordStore(
            database: database, registry: registry, recordTypes: records, workspace: workspace,
            principal: people.first(where: \.current)?.principal)
        lifecycle = try ItemLifecycle(
            database: database, stashDirectory: path + ".stash", registry: registry, recordTypes: records, configuration: configuration,
            environment: environment, observers: observers, recordStore: recordStore, workspace: workspace, people: people)
        do {
            try configuration.fileProtection.apply(to: [path, path + "-wal", path + "-shm", path + ".stash"])
        } catch {
            throw OutboxError.notDurable(reason: "cannot set the files' protection: \(error.localizedDescription)")
        }
        self.database = database
        self.observers = observers
        self.recordStore = recordStore
        placeholderIDs = lifecycle.placeholderIDs
        groupCommit = GroupCommit(lifecycle: lifecycle, callers: enqueueCallers)
        self.registry = registry
        self.transports = transports
        self.transport = transport
        self.environment = environment
        self.configuration = configuration
        self.refreshAuthentication = refreshAuthentication
        attachments = AttachmentCache(directory: path + ".files", protection: configuration.fileProtection)
    }

    /// The outbox runs on its database's own thread, never on the cooperative pool: its
    /// statements and fsyncs block that thread alone.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        database.unownedExecutor
    }

    /// An outbox for one workspace: the transport's own.
    public init(
        path: String, forms: [any FormPayload.Type], records: [any SyncRecord.Type] = [], transport: any OutboxTransport,
        configuration: Configuration = Configuration(), environment: OutboxEnvironment = .live,
        refreshAuthentication: @escaping @Sendable () async -> Bool = { false }
    ) throws {
        try self.init(
            path: path, workspace: transport.workspace, forms: forms, records: records,
            transports: { $0 == transport.workspace ? transport : nil },
            configuration: configuration, environment: environment, refreshAuthentication: refreshAuthentication)
    }

    // MARK: Workspaces

    /// Points the outbox at another workspace: from now on it captures into and sends only that
    /// workspace's items, through that workspace's own transport. Other workspaces' items stay
    /// stored, untouched. Throws `noTransport` (and stays where it was) when none serves it.
    public func switchWorkspace(to workspace: String) throws {
        guard let transport = transports(workspace), transport.workspace == workspace else {
            throw OutboxError.noTransport(workspace: workspace)
        }
        lifecycle.workspace = workspace
        self.transport = transport
        withRecords { $0.workspace = workspace }
        lifecycle.networkDown = false
        emitSnapshot(changed: nil)
        signalWork()
    }

    // MARK: Transactions

    /// Runs `body` in one transaction; on commit the in-memory counts follow and snapshots go
    /// out, on failure nothing changes and the error (typed) reaches the caller.
    func write<T>(_ durability: OutboxDatabase.Durability, _ body: () throws -> T) throws -> T {
        let (result, announce) = try lifecycle.commit(durability, body)
        announce()
        return result
    }

    /// Runs `body` on the record store, which shares this outbox's thread: its notes and
    /// writes join the outbox's running transaction.
    func withRecords<T: Sendable>(_ body: (isolated RecordStore) throws -> T) rethrows -> T {
        try lifecycle.withRecords(body)
    }

    /// Runs `body` (store reads and writes), its storage errors typed for callers.
    func storage<T>(_ body: () throws -> T) throws -> T {
        try OutboxDatabase.mapping(body)
    }
}
