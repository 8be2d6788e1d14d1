import FormSyncModel
import Foundation

/// The life of an outbox's items in its store: every move from one state to another (captured,
/// leased, confirmed, retrying, parked, reopened, blocked, released), written inside the
/// caller's transaction and counted only once that transaction commits, and the states and
/// counts the app is shown.
///
/// The outbox is the public face and the concurrency (group commit, flush passes, waiters);
/// this is the state machine underneath. It lives on its outbox's database thread and is used
/// by that outbox alone, so it needs no lock of its own.
final class ItemLifecycle {
    typealias State = OutboxStore.State

    /// One state move of the running transaction (nil: the item did not exist, or is gone).
    struct Change {
        var id: Int64
        /// The item's view (`PersonalView.key`): its workspace, and its owner's name if it has one.
        var view: String
        var from: State?
        var to: State?
    }

    let database: OutboxDatabase
    /// The tables, lent by the database on its thread only (see `OutboxDatabase.store`).
    var store: OutboxStore { database.store }
    let stash: FileStash
    let registry: FormRegistry
    let configuration: Outbox.Configuration
    let environment: OutboxEnvironment
    let observers: ObservationHub
    let recordStore: RecordStore
    let placeholderIDs: PlaceholderIDSource

    /// The workspace items are captured in and sent to.
    var workspace: String
    /// The person capturing now on a shared phone (nil: nobody signed in); the record store
    /// reads and pulls as them.
    var principal: String? {
        didSet {
            let current = principal
            withRecords { $0.principal = current }
        }
    }
    /// The people whose credential is on the device: their items may go out.
    var present: Set<String>
    /// The people whose credential the server revoked, and why: their items are sealed.
    var revokedPeople: [String: String]
    /// Whether anyone ever signed in on this device (a shared phone).
    var peopleKnown: Bool
    /// Committed items per view (`PersonalView.key`) and state.
    private(set) var counts: [String: [State: Int]]
    /// Why the server revoked the device, once it did (`Outbox.deviceRevoked`); nil while not.
    var revocationReason: String?
    /// The moves of the running transaction; they reach `counts` when it commits.
    var changes: [Change] = []
    /// Items this process leased whose request is on the wire.
    var inFlight: Set<Int64> = []
    /// Items the running flush pass leased ahead, to send as slots free up (not on the wire yet).
    var leasedAhead: Set<Int64> = []
    /// Items that went back to waiting during the running flush pass: not attempted again in it.
    var retrying: Set<Int64> = []
    /// What the running flush pass's transitions did.
    var report = FlushReport()
    /// Work became due that the running flush pass has not looked for (an enqueue, a reopen).
    var rescanRequested = false
    /// No server answered the last attempt: pending items are "waiting for network".
    var networkDown = false
    /// The size above which files wait for an unmetered network (the store's, kept here).
    var meteredFileLimit: Int64?

    /// Opens the items of `database` for `workspace` (`people`: who the store says is on the
    /// phone, read once at open): leases a previous run left expired go
    /// back to pending (same attempt identity), the record index follows `recordTypes`, what
    /// the last process committed without an fsync (it was killed between the two) is made
    /// durable before anything of it is reported, the stash's partial copies are removed, and
    /// the counts are read.
    init(
        database: OutboxDatabase, stashDirectory: String, registry: FormRegistry, recordTypes: RecordRegistry,
        configuration: Outbox.Configuration,
        environment: OutboxEnvironment, observers: ObservationHub, recordStore: RecordStore, workspace: String,
        people: [OutboxStore.Person]
    ) throws {
        let store = database.storeWhileOpening
        let now = environment.now()
        try database.transaction(.normal) {
            for (workspace, lane) in try store.reclaimExpiredLeases(now: now, horizon: configuration.longestLeaseMilliseconds) {
                try store.refreshLane(workspace: workspace, lane: lane)
            }
        }
        try OutboxDatabase.mapping { try store.reindex(recordTypes) }
        try database.syncLog()
        let stash = try FileStash(directory: stashDirectory)
        let (counts, lowestPlaceholder) = try OutboxDatabase.mapping {
            try stash.sweep { try store.referencesFile($0) }
            return (try store.counts(), try store.mostNegativePlaceholder())
        }
        revocationReason = try OutboxDatabase.mapping { try store.revocation()?.reason }
        principal = people.first(where: \.current)?.principal
        present = Set(people.filter(\.present).map(\.principal))
        peopleKnown = !people.isEmpty
        revokedPeople = Dictionary(
            people.compactMap { person in person.revoked.map { (person.principal, $0) } }, uniquingKeysWith: { a, _ in a })
        self.database = database
        self.stash = stash
        self.registry = registry
        self.configuration = configuration
        self.environment = environment
        self.observers = observers
        self.recordStore = recordStore
        placeholderIDs = PlaceholderIDSource(milliseconds: environment.now, issuedBefore: -lowestPlaceholder)
        self.workspace = workspace
        self.counts = counts
        meteredFileLimit = store.meteredFileLimit
    }

    // MARK: Transactions

    /// Runs `body` in one transaction. On commit the counts follow at once; the returned
    /// closure announces the changes (snapshots, record notices) when the caller may (a save
    /// announces only once its fsync is done). On failure nothing changes and the error (typed)
    /// is thrown.
    func commit<T>(_ durability: OutboxDatabase.Durability, _ body: () throws -> T) throws -> (T, announce: () -> Void) {
        changes = []
        _ = withRecords { $0.takeNotices() }
        do {
            let result = try database.transaction(durability, body)
            let committed = changes
            changes = []
            let notices = withRecords { $0.takeNotices() }
            for change in committed {
                if let from = change.from { counts[change.view, default: [:]][from, default: 0] -= 1 }
                if let to = change.to { counts[change.view, default: [:]][to, default: 0] += 1 }
            }
            return (
                result,
                { [self] in
                    withRecords { $0.announce(notices) }
                    guard observers.hasSnapshotListeners else { return }
                    let view = self.view
                    for change in committed where change.view == view {
                        emitSnapshot(
                            changed: change.to.map { OutboxItemChange(id: ItemID(change.id), state: publicState(id: change.id, $0)) })
                    }
                }
            )
        } catch {
            changes = []
            _ = withRecords { $0.takeNotices() }
            throw error
        }
    }

    /// Seals what has not gone out (`OutboxStore.sealItems`) in the caller's transaction; the
    /// counts are read again once it commits (`reloadCounts`).
    func sealUnsent(now: Int64) throws -> Int {
        try store.sealItems(reason: "sealed: \(revocationReason ?? "the device was revoked")", now: now)
    }

    /// The counts as the tables hold them, after a change made outside any move.
    func reloadCounts() throws {
        counts = try OutboxDatabase.mapping { try store.counts() }
    }

    /// Records a state move, applied to the counts only once its transaction commits.
    func move(_ row: inout OutboxStore.Row, to state: State?) {
        withRecords { $0.noteRecord(of: row) }
        changes.append(Change(id: row.id, view: Self.view(of: row), from: row.state, to: state))
        if let state { row.state = state }
    }

    /// Records a new item's first state.
    func created(_ row: OutboxStore.Row) {
        changes.append(Change(id: row.id, view: Self.view(of: row), from: nil, to: row.state))
    }

    /// The view an item shows in: its workspace, and its owner if it has one.
    static func view(of row: OutboxStore.Row) -> String {
        PersonalView(workspace: row.workspace, principal: row.principal).key
    }

    /// What the current person sees: the current workspace, as them.
    var view: String {
        PersonalView(workspace: workspace, principal: principal).key
    }

    /// Whether `row` waits for its owner, who is not signed in.
    func waitsForItsOwner(_ row: OutboxStore.Row) -> Bool {
        row.state == .pending && row.principal.map { !present.contains($0) } ?? false
    }

    /// Runs `body` on the record store, which shares this thread: its notes and writes join
    /// the running transaction.
    func withRecords<T: Sendable>(_ body: (isolated RecordStore) throws -> T) rethrows -> T {
        try recordStore.assumeIsolated(body)
    }

    /// The row of `id`, refused when it belongs to another workspace than the current one.
    func existing(_ id: ItemID) throws -> OutboxStore.Row {
        guard let row = try store.item(id.rawValue) else { throw OutboxError.noSuchItem(id) }
        guard row.workspace == workspace else { throw OutboxError.otherWorkspace(id: id, itemWorkspace: row.workspace, current: workspace) }
        guard row.principal == principal else { throw OutboxError.otherPerson(id: id, owner: row.principal, current: principal) }
        return row
    }

    // MARK: What the app is shown

    /// Counts per state for the current workspace, as the current person sees it.
    func stateCounts() -> [SyncState: Int] {
        let stored = counts[view] ?? [:]
        let sent = inFlight.count
        let held = meteredFileLimit == nil ? 0 : (try? store.heldForUnmeteredNetwork(workspace: workspace)) ?? 0
        return [
            networkDown ? .waitingForNetwork : .savedOnDevice: (stored[.pending] ?? 0) - held,
            .waitingForUnmeteredNetwork: held,
            .sending: max(0, (stored[.leased] ?? 0) - sent),
            .sent: sent,
            .confirmed: stored[.confirmed] ?? 0,
            .rejected: stored[.rejected] ?? 0,
            .conflict: stored[.conflict] ?? 0,
            .exhausted: stored[.exhausted] ?? 0,
            .blocked: stored[.blocked] ?? 0,
            .sealed: stored[.sealed] ?? 0,
        ].filter { $0.value > 0 }
    }

    /// Items of the current workspace that can still go out without a person acting: its
    /// own and those of everyone signed in.
    func remainingCount() -> Int {
        counts.reduce(0) { total, entry in
            let view = PersonalView(key: entry.key)
            guard view.workspace == workspace, view.principal.map(present.contains) ?? true else { return total }
            return total + (entry.value[.pending] ?? 0) + (entry.value[.leased] ?? 0)
        }
    }

    func snapshot(changed: OutboxItemChange?) -> OutboxSnapshot {
        OutboxSnapshot(workspace: workspace, counts: stateCounts(), changed: changed)
    }

    func emitSnapshot(changed: OutboxItemChange?) {
        guard observers.hasSnapshotListeners else { return }
        observers.publish(snapshot(changed: changed))
    }

    func publicState(_ row: OutboxStore.Row) -> SyncState {
        if waitsForItsOwner(row) { return .waitingForItsOwner }
        if row.state == .pending, row.kind == .file, let limit = meteredFileLimit, (row.byteCount ?? 0) > limit,
            (try? store.heldForUnmeteredNetwork(workspace: row.workspace, item: row.id)) == 1
        {
            return .waitingForUnmeteredNetwork
        }
        return publicState(id: row.id, row.state)
    }

    func publicState(id: Int64, _ state: State) -> SyncState {
        switch state {
        case .pending: return networkDown ? .waitingForNetwork : .savedOnDevice
        case .leased: return inFlight.contains(id) ? .sent : .sending
        case .confirmed: return .confirmed
        case .rejected: return .rejected
        case .conflict: return .conflict
        case .exhausted: return .exhausted
        case .blocked: return .blocked
        case .sealed: return .sealed
        }
    }

    func publicItem(_ row: OutboxStore.Row) -> OutboxItem {
        OutboxItem(row, state: publicState(row))
    }
}
