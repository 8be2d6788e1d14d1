import Foundation
import FormSyncModel

/// The durable outbox: every submission is committed to SQLite before anything else happens,
/// goes out in order within its lane and in parallel across lanes, is classified on every
/// reply, and leaves only when the server acknowledged it or a person discarded it.
///
/// One actor owns the database connection, so every state transition is serialised and
/// committed before it is acted on. See README, "The outbox and the sync engine".
public actor Outbox {
    typealias State = OutboxStore.State

    /// An item on the wire.
    struct Lease: Sendable {
        var itemID: Int64
        var attemptID: String
        /// Which attempt this is, from 1.
        var attempt: Int
        var request: OutboundRequest
    }

    struct Change {
        var id: Int64
        var workspace: String
        var from: State?
        var to: State?
    }

    /// The file's owner: the writer, its thread, the group commit, the readers.
    nonisolated let database: OutboxDatabase
    /// The tables (`database.store`), used on the database's thread only.
    let store: OutboxStore
    /// How many `enqueue` calls are under way (queued on the actor or running).
    nonisolated let enqueueCallers = CallerCount()
    let stash: FileStash
    let registry: FormRegistry
    /// The record types this device stores and queries.
    let recordTypes: RecordRegistry
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
    nonisolated let observers = ObservationHub()

    /// The device's records, as the app reads them (pulled, with unsent work on top); it
    /// shares this outbox's file and thread.
    public nonisolated let recordStore: RecordStore

    /// The workspace (server + tenant) items are captured in and sent to.
    public private(set) var workspace: String

    var counts: [String: [State: Int]]
    var inFlight: Set<Int64> = []
    var uncommitted: [Change] = []
    /// Enqueues gathering for one transaction (see `saveDurably`).
    var saveBatch: [SaveRequest] = []
    /// The commit number of the latest save (`writeDurably`): an enqueue that finds its document
    /// already stored waits until this one is durable before it returns.
    var lastSaveCommit: UInt64 = 0
    /// The running flush pass, if any: which flush() calls it answers, and how many callers
    /// still wait for it (cancelled when none does).
    var pass: (id: Int, ticket: Int, task: Task<FlushReport, Never>)?
    var passWaiters: [Int: Int] = [:]
    var passCount = 0
    var flushRequests = 0
    var rescanRequested = false
    var report = FlushReport()
    /// Items that went back to waiting during this pass: never attempted again in it.
    var retryingThisFlush: Set<Int64> = []
    /// No server answered the last attempt: pending items are "waiting for network" until a
    /// server answers again (a reply or a successful probe).
    var networkDown = false
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
        guard let transport = transports(workspace), transport.workspace == workspace else { throw OutboxError.noTransport(workspace: workspace) }
        let now = environment.now()
        let database = try OutboxDatabase(path: path, now: now, openFlags: configuration.fileProtection.sqliteOpenFlag, syncLog: environment.syncLog)
        let store = database.store
        try database.transaction(.normal) {
            for (workspace, lane) in try store.reclaimExpiredLeases(now: now, horizon: configuration.leaseMilliseconds) {
                try store.refreshLane(workspace: workspace, lane: lane)
            }
        }
        try OutboxDatabase.mapping { try store.reindex(records) }
        // What the last process committed but did not fsync (it was killed between the two)
        // is durable before this one reports any of it: its snapshot, a repeated enqueue.
        try database.syncLog()
        let stash = try FileStash(directory: path + ".stash")
        let (counts, lowestPlaceholder) = try OutboxDatabase.mapping {
            try stash.sweep { try store.referencesFile($0) }
            return (try store.counts(), try store.mostNegativePlaceholder())
        }
        self.database = database
        self.store = store
        self.stash = stash
        self.counts = counts
        placeholderIDs = PlaceholderIDSource(milliseconds: environment.now, issuedBefore: -lowestPlaceholder)
        do {
            try configuration.fileProtection.apply(to: [path, path + "-wal", path + "-shm", path + ".stash"])
        } catch {
            throw OutboxError.notDurable(reason: "cannot set the files' protection: \(error.localizedDescription)")
        }
        self.registry = registry
        recordTypes = records
        recordStore = RecordStore(database: database, registry: registry, recordTypes: records, workspace: workspace)
        self.transports = transports
        self.transport = transport
        self.environment = environment
        self.configuration = configuration
        self.refreshAuthentication = refreshAuthentication
        self.workspace = workspace
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
            path: path, workspace: transport.workspace, forms: forms, records: records, transports: { $0 == transport.workspace ? transport : nil },
            configuration: configuration, environment: environment, refreshAuthentication: refreshAuthentication)
    }

    // MARK: Workspaces

    /// Points the outbox at another workspace: from now on it captures into and sends only that
    /// workspace's items, through that workspace's own transport. Other workspaces' items stay
    /// stored, untouched. Throws `noTransport` (and stays where it was) when none serves it.
    public func switchWorkspace(to workspace: String) throws {
        guard let transport = transports(workspace), transport.workspace == workspace else { throw OutboxError.noTransport(workspace: workspace) }
        self.workspace = workspace
        self.transport = transport
        withRecords { $0.workspace = workspace }
        networkDown = false
        emitSnapshot(changed: nil)
        signalWork()
    }

    /// The row of `id`, refused when it belongs to another workspace than the current one.
    func existing(_ id: ItemID) throws -> OutboxStore.Row {
        guard let row = try store.item(id.rawValue) else { throw OutboxError.noSuchItem(id) }
        guard row.workspace == workspace else { throw OutboxError.otherWorkspace(id: id, itemWorkspace: row.workspace, current: workspace) }
        return row
    }

    // MARK: Transactions

    /// Records a state move, applied to the counts only once its transaction commits.
    func move(_ row: inout OutboxStore.Row, to state: State?) throws {
        withRecords { $0.noteRecord(of: row) }
        record(row.id, row.workspace, from: row.state, to: state)
        if let state { row.state = state }
    }

    func record(_ id: Int64, _ workspace: String, from: State?, to: State?) {
        uncommitted.append(Change(id: id, workspace: workspace, from: from, to: to))
    }

    /// Runs `body` in one transaction; on commit the in-memory counts follow and snapshots go
    /// out, on failure nothing changes and the error (typed) reaches the caller.
    func write<T>(_ durability: OutboxDatabase.Durability, _ body: () throws -> T) throws -> T {
        let (result, announce) = try commit(durability, body)
        announce()
        return result
    }

    /// `write` for what a person is told was saved, as a group commit: the transaction commits
    /// at NORMAL, and this returns once one fsync of the log, shared with every writer that
    /// committed meanwhile (concurrent enqueues), made it durable. Its changes are announced
    /// only then, so no snapshot shows "saved" before it is.
    ///
    /// No thread of the cooperative pool waits for the disk: the fsync runs on the outbox's
    /// own thread when nothing waits for it, otherwise on the syncer's queue while enqueues
    /// that arrive meanwhile commit and share the next fsync.
    func writeDurably<T>(_ body: () throws -> T) async throws -> T {
        let (result, announce) = try commit(.normal, body)
        let number = database.commitCount
        lastSaveCommit = max(lastSaveCommit, number)
        // Alone, the fsync runs on this thread: it is the outbox's own, and nobody waits for
        // it. With callers queued behind, it runs elsewhere while they commit, and they share
        // the next one.
        try await database.durable(through: number, alone: enqueueCallers.value.load(ordering: .relaxed) <= 1)
        announce()
        return result
    }

    /// `writeDurably` for a caller that waits for the fsync itself, off this thread (an
    /// enqueue among others, whose fsync is shared): commits, and returns the commit number
    /// the caller must see durable before it reports anything saved (0: already durable).
    /// When someone watches snapshots or records, it waits here instead, since its changes are
    /// announced only once they are durable.
    func writeDeferringSync<T>(_ body: () throws -> T) async throws -> (T, pending: UInt64) {
        let (result, announce) = try commit(.normal, body)
        let number = database.commitCount
        lastSaveCommit = max(lastSaveCommit, number)
        guard observers.hasSnapshotListeners || withRecords({ !$0.listeners.isEmpty }) else { return (result, number) }
        try await database.durable(through: number, alone: false)
        announce()
        return (result, 0)
    }

    /// Commits `body`; the counts follow at once, snapshots and record notices when the
    /// returned closure runs.
    private func commit<T>(_ durability: OutboxDatabase.Durability, _ body: () throws -> T) throws -> (T, () -> Void) {
        uncommitted = []
        _ = withRecords { $0.takeNotices() }
        do {
            let result = try database.transaction(durability, body)
            let changes = uncommitted
            uncommitted = []
            let notices = withRecords { $0.takeNotices() }
            for change in changes {
                if let from = change.from { counts[change.workspace, default: [:]][from, default: 0] -= 1 }
                if let to = change.to { counts[change.workspace, default: [:]][to, default: 0] += 1 }
            }
            return (result, { [self] in
                withRecords { $0.announce(notices) }
                if observers.hasSnapshotListeners {
                    for change in changes where change.workspace == workspace {
                        emitSnapshot(changed: change.to.map { OutboxItemChange(id: ItemID(change.id), state: publicState(id: change.id, $0)) })
                    }
                }
            })
        } catch {
            uncommitted = []
            _ = withRecords { $0.takeNotices() }
            throw error
        }
    }

    /// Runs `body` on the record store, which shares this outbox's thread: its notes and
    /// writes join the outbox's running transaction.
    func withRecords<T: Sendable>(_ body: (isolated RecordStore) throws -> T) rethrows -> T {
        try recordStore.assumeIsolated(body)
    }

    /// Runs `body` (store reads and writes), its storage errors typed for callers.
    func storage<T>(_ body: () throws -> T) throws -> T {
        try OutboxDatabase.mapping(body)
    }
}
