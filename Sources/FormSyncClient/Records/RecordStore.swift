import FormSyncModel
import Foundation

/// Which records changed on the device, by type: pulled, created or edited here, landed
/// (a record created offline is re-keyed from its placeholder id to its server id: both ids
/// are named), or shown differently because an unsent edit was fixed, merged or discarded.
public struct RecordsChanged: Sendable, Equatable {
    /// Record type name → the ids that changed.
    public var changes: [String: Set<Int64>]
}

/// The device's copy of the records in its scope, as the app reads them: what it pulled, with
/// every submission not yet confirmed applied on top. It shares the outbox's file and thread
/// (`Outbox.recordStore`), and its queries run on reader connections, so a long query never
/// waits behind a write. Edits go through the outbox (`Outbox.edit`), pulls too (`Outbox.pull`):
/// they are traffic; this type is the store and its notices.
public actor RecordStore {
    let database: OutboxDatabase
    /// The tables, lent by the database on its thread only (see `OutboxDatabase.store`).
    var store: OutboxStore { database.store }
    let registry: FormRegistry
    let recordTypes: RecordRegistry
    /// The workspace read and written: the outbox's current one.
    var workspace: String
    /// The person whose records are read and pulled on a shared phone (nil: nobody signed in).
    var principal: String?
    /// Where this person's records of this workspace are kept.
    var view: String { PersonalView(workspace: workspace, principal: principal).key }
    var listeners: [UUID: AsyncStream<RecordsChanged>.Continuation] = [:]
    /// Records shown differently by the running transaction, announced when it commits.
    var notices: [String: Set<Int64>] = [:]
    /// The running pull, which concurrent `pull()` calls share.
    var pulling: Task<PullReport, any Error>?

    init(database: OutboxDatabase, registry: FormRegistry, recordTypes: RecordRegistry, workspace: String, principal: String?) {
        self.database = database
        self.registry = registry
        self.recordTypes = recordTypes
        self.workspace = workspace
        self.principal = principal
    }

    /// The record store runs on its outbox's database thread: the outbox writes records in
    /// its own transactions (an acknowledgement, a page of the feed) without a hop.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        database.unownedExecutor
    }

    // MARK: Reading

    /// The records of `R` the query selects, as the device shows them: what it pulled, with
    /// every submission not yet confirmed applied on top (an unsent edit shows at once; a record
    /// created offline is there under its placeholder id). Never waits on the network.
    public func records<R: SyncRecord>(_ query: RecordQuery<R>) async throws -> [R] {
        let (workspace, principal, view) = (self.workspace, self.principal, self.view)
        let registry = self.registry
        return try await database.read { store in
            let type = R.recordType
            let shown = try Self.overlay(store, registry: registry, type: type, workspace: workspace, principal: principal)
            var wanted = query
            let stored: [OutboxStore.StoredRecord]
            switch query.filter {
            case .all:
                stored = try store.storedRecords(view: view, type: type)
            case .id(let id):
                // A placeholder whose create has landed finds the record under its server id.
                let effective = id < 0 ? (try store.resolvedID(id, workspace: workspace) ?? id) : id
                wanted = .id(effective)
                stored = try store.storedRecord(view: view, type: type, id: effective).map { [$0] } ?? []
            case .field(let field, let value):
                // A field past the last key column (a registry built by hand: the spec checker
                // allows no more) is found by reading every record of the type.
                if let slot = R.indexedFields.firstIndex(of: field), slot < OutboxStore.recordKeySlots {
                    stored = try store.storedRecords(view: view, type: type, slot: slot, value: value)
                } else {
                    stored = try store.storedRecords(view: view, type: type)
                }
            }
            var result: [R] = []
            for record in stored where shown[record.id] == nil {
                if let typed = try? RecordProjection.decode(R.self, fields: record.payload, id: record.id, version: record.version),
                    wanted.matches(typed)
                {
                    result.append(typed)
                }
            }
            for (id, record) in shown where record.version >= 0 {
                if let typed = try? RecordProjection.decode(R.self, fields: record.payload, id: id, version: record.version),
                    wanted.matches(typed)
                {
                    result.append(typed)
                }
            }
            return result.sorted { $0.id < $1.id }
        }
    }

    /// One record as the device shows it (see `records(_:)`); a placeholder id finds the
    /// record created offline, before and after its create lands.
    public func record<R: SyncRecord>(_ type: R.Type, id: Int64) async throws -> R? {
        try await records(RecordQuery<R>.id(id)).first
    }

    /// The server id a placeholder landed as, once its creating submission is confirmed.
    public func serverID(forPlaceholder placeholder: Int64) async throws -> Int64? {
        let workspace = self.workspace
        return try await database.read { try $0.resolvedID(placeholder, workspace: workspace) }
    }

    /// How many records the device holds for the current workspace and person (pulled or
    /// acknowledged).
    public func storedRecordCount() async throws -> Int {
        let view = self.view
        return try await database.read { try $0.recordCount(view: view) }
    }

    /// Forgets every pulled record and the feed's cursor of the current workspace and person,
    /// so the next pull starts from the beginning (a scope that changed on the server, say).
    /// Unsent work is kept and still shows on top. A shared phone needs no such call: each
    /// person's records are kept apart (`Outbox.signIn`).
    public func forgetPulledRecords() throws {
        let view = self.view
        try database.transaction(.full) { try store.clearRecords(view: view) }
    }

    // MARK: Notices

    /// Notices of which records changed, for a UI to refresh what it shows. A slow reader
    /// only misses notices, never the records themselves (read them again).
    public func recordChanges() -> AsyncStream<RecordsChanged> {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(of: RecordsChanged.self, bufferingPolicy: .bufferingNewest(64))
        listeners[id] = continuation
        continuation.onTermination = { [weak self] _ in Task { await self?.removeListener(id) } }
        return stream
    }

    private func removeListener(_ id: UUID) {
        listeners[id] = nil
    }

    /// Notes that a record is shown differently once the running transaction commits.
    func noteRecord(_ type: String, _ ids: Int64...) {
        guard !listeners.isEmpty else { return }
        notices[type, default: []].formUnion(ids)
    }

    /// Notes the record an item of a bound form shows on (its placeholder, or the record it edits).
    func noteRecord(of row: OutboxStore.Row) {
        // Every state move passes here: with nobody listening, reading the payload is waste.
        guard !listeners.isEmpty, row.kind == .submission, let form = row.form, let entry = registry[form] else { return }
        if !entry.listRecordActions.isEmpty, let items = try? store.itemRecords(of: row.id) {
            for item in items { noteRecord(item.type, item.placeholder) }
        }
        guard let action = entry.recordAction else { return }
        if action.kind == .creates, let placeholder = row.produces {
            noteRecord(action.recordType, placeholder)
        } else if let payload = row.payload, let id = RecordProjection.editedID(form: payload, action: action) {
            noteRecord(action.recordType, id)
        }
    }

    /// The notices of the transaction that just ended (to announce once it is durable), and
    /// none pending after.
    func takeNotices() -> [String: Set<Int64>] {
        defer { notices = [:] }
        return notices
    }

    func announce(_ changes: [String: Set<Int64>]) {
        guard !changes.isEmpty, !listeners.isEmpty else { return }
        for listener in listeners.values { listener.yield(RecordsChanged(changes: changes)) }
    }

    // MARK: Overlay

    /// The records of `type` that `principal`'s unconfirmed submissions change, by id, with
    /// those changes applied in the order they were captured.
    /// An overlay entry for a record an unsent delete removes: shown nowhere.
    static let deleted: (version: Int, payload: Data) = (-1, Data())

    static func overlay(
        _ store: OutboxStore, registry: FormRegistry, type: String, workspace: String, principal: String?
    ) throws -> [Int64: (version: Int, payload: Data)] {
        let forms = registry.names.filter { name in
            registry[name]?.recordAction?.recordType == type || registry[name]?.listRecordActions.contains { $0.recordType == type } == true
        }
        let view = PersonalView(workspace: workspace, principal: principal).key
        var shown: [Int64: (version: Int, payload: Data)] = [:]
        for row in try store.unconfirmedSubmissions(workspace: workspace, principal: principal, forms: forms) {
            guard let form = row.form, let entry = registry[form], var payload = row.payload else { continue }
            let resolved = try store.resolvedDependencies(of: row.id, workspace: workspace)
            if !resolved.isEmpty, let remapped = try? entry.remap(payload, resolved).payload { payload = remapped }
            // The records its lists create, each under its item's placeholder, until it lands.
            if row.serverID == nil {
                let items = try store.itemRecords(of: row.id)
                for action in entry.listRecordActions where action.recordType == type {
                    guard let records = try? RecordProjection.listRecords(form: payload, action: action) else { continue }
                    for item in items where item.list == action.list && item.position < records.count {
                        shown[item.placeholder] = (0, records[item.position])
                    }
                }
            }
            guard let action = entry.recordAction, action.recordType == type else { continue }
            switch action.kind {
            case .creates:
                // A create that landed and was sent back for a fix: the person's fix shows over
                // the record the server holds, not as a second record.
                if let landed = row.serverID {
                    let base = try shown[landed] ?? store.storedRecord(view: view, type: type, id: landed).map { ($0.version, $0.payload) }
                    guard let base, let fields = try? RecordProjection.apply(form: payload, to: base.payload, action: action) else {
                        continue
                    }
                    shown[landed] = (base.version, fields)
                    continue
                }
                guard let placeholder = row.produces, let fields = try? RecordProjection.apply(form: payload, to: nil, action: action)
                else { continue }
                shown[placeholder] = (0, fields)
            case .edits:
                guard var id = RecordProjection.editedID(form: payload, action: action) else { continue }
                if id < 0, let server = try store.resolvedID(id, workspace: workspace) { id = server }
                let base = try shown[id] ?? store.storedRecord(view: view, type: type, id: id).map { ($0.version, $0.payload) }
                guard let base, let fields = try? RecordProjection.apply(form: payload, to: base.payload, action: action) else { continue }
                shown[id] = (base.version, fields)
            case .deletes:
                guard var id = RecordProjection.editedID(form: payload, action: action) else { continue }
                if id < 0, let server = try store.resolvedID(id, workspace: workspace) { id = server }
                shown[id] = Self.deleted
            }
        }
        return shown
    }

    // MARK: Acknowledgements and pulled changes

    /// After a submission of a bound form is confirmed: the record the server now holds goes
    /// into the store (unless a newer one is there), and edits waiting on a record created
    /// offline take the version it landed with as their base.
    func storeAcknowledgedRecord(_ row: OutboxStore.Row, _ ack: ServerAcknowledgement, now: Int64) throws {
        guard let form = row.form, let entry = registry[form] else { return }
        // Into the view of the person who sent it, whoever is signed in now.
        let view = ItemLifecycle.view(of: row)
        if !ack.createdRecords.isEmpty, !entry.listRecordActions.isEmpty {
            let created = Dictionary(ack.createdRecords.map { ("\($0.list)/\($0.index)", $0.record) }, uniquingKeysWith: { a, _ in a })
            for item in try store.itemRecords(of: row.id) {
                guard let change = created["\(item.list)/\(item.position)"], change.type == item.type else { continue }
                if let fields = change.fields, try !store.hasTombstone(view: view, type: change.type, id: change.id) {
                    try applyChange(change, fields: fields, view: view)
                }
                noteRecord(item.type, item.placeholder, change.id)
                try rebaseEdits(
                    of: item.placeholder, type: item.type, serverID: change.id, version: "\"\(change.version)\"", fields: change.fields,
                    workspace: row.workspace, now: now)
            }
        }
        guard let action = entry.recordAction else { return }
        if let change = ack.record, change.type == action.recordType, let fields = change.fields,
            try !store.hasTombstone(view: view, type: change.type, id: change.id)
        {
            try applyChange(change, fields: fields, view: view)
        }
        if action.kind == .deletes, let change = ack.record, change.type == action.recordType, change.fields == nil {
            try removeRecord(type: change.type, id: change.id, view: view)
        }
        // A delete queued behind this device's own edit of the record was decided on the
        // version before it: it takes the version the edit made, so as not to meet its own
        // edit as someone else's change.
        if action.kind == .edits, let base = row.baseVersion, let version = ack.version, let payload = row.payload,
            let id = RecordProjection.editedID(form: payload, action: action)
        {
            let deletes = registry.names.filter {
                registry[$0]?.recordAction.map { $0.kind == .deletes && $0.recordType == action.recordType } == true
            }
            for var queued in try store.openSubmissions(workspace: row.workspace, forms: deletes)
            where queued.sends == 0 && queued.baseVersion == base && queued.id > row.id {
                guard let form = queued.form, let deleteAction = registry[form]?.recordAction, let held = queued.payload,
                    let target = RecordProjection.editedID(form: held, action: deleteAction), target == id || target == ack.serverID
                else { continue }
                queued.baseVersion = version
                try store.update(queued, now: now)
            }
        }
        guard action.kind == .creates, let placeholder = row.produces, let serverID = ack.serverID else { return }
        noteRecord(action.recordType, placeholder, serverID)
        try rebaseEdits(
            of: placeholder, type: action.recordType, serverID: serverID, version: ack.version ?? ack.record.map { "\"\($0.version)\"" },
            fields: ack.record?.fields, workspace: row.workspace, now: now)
    }

    /// Edits that wait for a record created offline take the version it landed with as their
    /// base (and its fields as their base payload).
    private func rebaseEdits(
        of placeholder: Int64, type: String, serverID: Int64, version: String?, fields: Data?, workspace: String, now: Int64
    ) throws {
        for dependent in try store.dependents(of: placeholder) {
            guard var edit = try store.item(dependent), edit.workspace == workspace, edit.baseVersion == nil, edit.state != .confirmed,
                let editForm = edit.form, let editAction = registry[editForm]?.recordAction, editAction.kind == .edits,
                editAction.recordType == type, let payload = edit.payload,
                RecordProjection.editedID(form: payload, action: editAction) == placeholder
            else { continue }
            edit.baseVersion = version
            if let fields { edit.basePayload = try? RecordProjection.editPayload(record: fields, id: serverID, action: editAction) }
            try store.update(edit, now: now)
        }
    }

    /// Removes a record from `view` and keeps its tombstone (a deletion the device made and
    /// the server acknowledged, or one the feed brought).
    func removeRecord(type: String, id: Int64, view: String) throws {
        if try store.deleteRecord(view: view, type: type, id: id) { noteRecord(type, id) }
        try store.addTombstone(view: view, type: type, id: id)
    }

    /// Writes one pulled or acknowledged record into `view`, its keys included.
    /// `keys`: the record's key columns when they were read already (a pull reads them off
    /// this thread).
    func applyChange(_ change: RecordChange, fields: Data, view: String, keys: [String?]? = nil) throws {
        let keys =
            keys
            ?? recordTypes[change.type].map { OutboxStore.recordKeys((try? $0.indexEntries(fields)) ?? [], fields: $0.indexedFields) }
            ?? []
        if try store.upsertRecord(
            view: view, type: change.type, id: change.id, version: change.version, payload: fields, keys: keys)
        {
            noteRecord(change.type, change.id)
        }
    }
}
