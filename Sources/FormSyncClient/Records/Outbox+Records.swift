import Foundation
import FormSyncModel

/// Which records changed on the device, by type: pulled, created or edited here, landed
/// (a record created offline is re-keyed from its placeholder id to its server id: both ids
/// are named), or shown differently because an unsent edit was fixed, merged or discarded.
public struct RecordsChanged: Sendable, Equatable {
    /// Record type name → the ids that changed.
    public var changes: [String: Set<Int64>]
}

extension Outbox {
    // MARK: Reading

    /// The records of `R` the query selects, as the device shows them: what it pulled, with
    /// every submission not yet confirmed applied on top (an unsent edit shows at once; a record
    /// created offline is there under its placeholder id). Never waits on the network.
    public func records<R: SyncRecord>(_ query: RecordQuery<R>) throws -> [R] {
        let workspace = self.workspace
        let type = R.recordType
        return try storage {
            let shown = try overlay(type: type, workspace: workspace)
            var wanted = query
            let stored: [OutboxStore.StoredRecord]
            switch query.filter {
            case .all:
                stored = try store.storedRecords(workspace: workspace, type: type)
            case .id(let id):
                // A placeholder whose create has landed finds the record under its server id.
                let effective = id < 0 ? (try store.resolvedID(id, workspace: workspace) ?? id) : id
                wanted = .id(effective)
                stored = try store.storedRecord(workspace: workspace, type: type, id: effective).map { [$0] } ?? []
            case .field(let field, let value):
                stored = try store.storedRecords(workspace: workspace, type: type, field: field, value: value)
            }
            var result: [R] = []
            for record in stored where shown[record.id] == nil {
                if let typed = try? RecordProjection.decode(R.self, fields: record.payload, id: record.id, version: record.version) { result.append(typed) }
            }
            for (id, record) in shown {
                if let typed = try? RecordProjection.decode(R.self, fields: record.payload, id: id, version: record.version), wanted.matches(typed) {
                    result.append(typed)
                }
            }
            return result.sorted { $0.id < $1.id }
        }
    }

    /// One record as the device shows it (see `records(_:)`); a placeholder id finds the
    /// record created offline, before and after its create lands.
    public func record<R: SyncRecord>(_ type: R.Type, id: Int64) throws -> R? {
        try records(RecordQuery<R>.id(id)).first
    }

    /// The server id a placeholder landed as, once its creating submission is confirmed.
    public func serverID(forPlaceholder placeholder: Int64) throws -> Int64? {
        let workspace = self.workspace
        return try storage { try store.resolvedID(placeholder, workspace: workspace) }
    }

    /// How many records the device holds for the current workspace (pulled or acknowledged).
    public func storedRecordCount() throws -> Int {
        let workspace = self.workspace
        return try storage { try store.recordCount(workspace: workspace) }
    }

    /// Forgets every pulled record and the feed's cursor of the current workspace, so the next
    /// pull starts from the beginning: for a device handed to another person (another
    /// principal, another scope). Unsent work is kept and still shows on top.
    public func forgetPulledRecords() throws {
        let workspace = self.workspace
        try write(.full) { try store.clearRecords(workspace: workspace) }
    }

    /// Notices of which records changed, for a UI to refresh what it shows. A slow reader
    /// only misses notices, never the records themselves (read them again).
    public func recordChanges() -> AsyncStream<RecordsChanged> {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(of: RecordsChanged.self, bufferingPolicy: .bufferingNewest(64))
        recordListeners[id] = continuation
        continuation.onTermination = { _ in Task { await self.removeRecordListener(id) } }
        return stream
    }

    private func removeRecordListener(_ id: UUID) {
        recordListeners[id] = nil
    }

    /// Notes that a record is shown differently once the running transaction commits.
    func noteRecord(_ type: String, _ ids: Int64...) {
        guard !recordListeners.isEmpty else { return }
        recordNotices[type, default: []].formUnion(ids)
    }

    /// Notes the record an item of a bound form shows on (its placeholder, or the record it edits).
    func noteRecord(of row: OutboxStore.Row) {
        // Every state move passes here: with nobody listening, reading the payload is waste.
        guard !recordListeners.isEmpty, row.kind == .submission, let form = row.form, let action = registry[form]?.recordAction else { return }
        if action.kind == .creates, let placeholder = row.produces {
            noteRecord(action.recordType, placeholder)
        } else if let payload = row.payload, let id = RecordProjection.editedID(form: payload, action: action) {
            noteRecord(action.recordType, id)
        }
    }

    func emitRecordNotices(_ notices: [String: Set<Int64>]) {
        guard !notices.isEmpty, !recordListeners.isEmpty else { return }
        for listener in recordListeners.values { listener.yield(RecordsChanged(changes: notices)) }
    }

    /// The records of `type` that unconfirmed submissions change, by id, with those changes
    /// applied in the order they were captured.
    func overlay(type: String, workspace: String) throws -> [Int64: (version: Int, payload: Data)] {
        let forms = registry.names.filter { registry[$0]?.recordAction?.recordType == type }
        var shown: [Int64: (version: Int, payload: Data)] = [:]
        for row in try store.unconfirmedSubmissions(workspace: workspace, forms: forms) {
            guard let form = row.form, let entry = registry[form], let action = entry.recordAction, var payload = row.payload else { continue }
            let resolved = try store.resolvedDependencies(of: row.id, workspace: workspace)
            if !resolved.isEmpty, let remapped = try? entry.remap(payload, resolved).payload { payload = remapped }
            switch action.kind {
            case .creates:
                guard let placeholder = row.produces, let fields = try? RecordProjection.apply(form: payload, to: nil, action: action) else { continue }
                shown[placeholder] = (0, fields)
            case .edits:
                guard var id = RecordProjection.editedID(form: payload, action: action) else { continue }
                if id < 0, let server = try store.resolvedID(id, workspace: workspace) { id = server }
                let base = try shown[id] ?? store.storedRecord(workspace: workspace, type: type, id: id).map { ($0.version, $0.payload) }
                guard let base, let fields = try? RecordProjection.apply(form: payload, to: base.payload, action: action) else { continue }
                shown[id] = (base.version, fields)
            }
        }
        return shown
    }

    // MARK: Editing

    /// Edits the record `id` through the edit form `F` (`edits:` in its spec): the form starts
    /// from the record as the device shows it (unsent edits included), `change` changes it, and
    /// it is queued with the record as last pulled as its base and that version as `If-Match`.
    /// A pulled change to the record never loses either side: a stale base is merged at send
    /// time by the form's conflict policies, and money the server owns keeps the server's
    /// value and parks the item as a conflict when the edit differed. An unsent edit of the
    /// same record is replaced (one write, against the earliest base). Editing a record
    /// created offline waits for its create to land and is based on the version it landed with.
    ///
    /// - Returns: the outbox item's id.
    @discardableResult
    public func edit<F: FormPayload>(_ form: F.Type, id: Int64, attachments: [Attachment] = [], _ change: (inout F) throws -> Void) async throws -> Int64 {
        guard let action = F.recordAction, action.kind == .edits else { throw OutboxError.notAnEditForm(F.formName) }
        let workspace = self.workspace
        let (key, base, shown, earlier) = try storage { () throws -> (Int64, OutboxStore.StoredRecord?, (version: Int, payload: Data)?, OutboxStore.Row?) in
            let key = id < 0 ? (try store.resolvedID(id, workspace: workspace) ?? id) : id
            let base = key > 0 ? try store.storedRecord(workspace: workspace, type: action.recordType, id: key) : nil
            let shown = try overlay(type: action.recordType, workspace: workspace)[key] ?? base.map { ($0.version, $0.payload) }
            let earlier = try store.unconfirmedSubmissions(workspace: workspace, forms: [F.formName]).last { row in
                guard let payload = row.payload, let edited = RecordProjection.editedID(form: payload, action: action) else { return false }
                let resolved = edited < 0 ? ((try? store.resolvedID(edited, workspace: workspace)) ?? nil) ?? edited : edited
                return resolved == key
            }
            return (key, base, shown, earlier)
        }
        guard let shown else { throw OutboxError.noSuchRecord(type: action.recordType, id: id) }
        var payload: F
        let basePayload: F?
        do {
            payload = try JSONDecoder().decode(F.self, from: try RecordProjection.editPayload(record: shown.payload, id: key, action: action))
            basePayload = try base.map { try JSONDecoder().decode(F.self, from: try RecordProjection.editPayload(record: $0.payload, id: key, action: action)) }
        } catch {
            throw OutboxError.invalidPayload([FieldError(pointer: JSONPointer.root, code: "invalid", detail: "the stored \(action.recordType) \(id) cannot be read as \(F.formName): \(error)")])
        }
        try change(&payload)
        // An unsent edit of this record is replaced; one already sent (or parked) stands, and
        // this edit is a new document behind it. Its base is then the record as shown, with
        // that earlier edit applied: the server will hold the earlier edit by the time this
        // one arrives, and it is not a change made by someone else (merging against the
        // pulled record would take the device's own earlier edit for a concurrent one).
        let replaceable = earlier.flatMap { row in (row.state == .pending || row.state == .blocked) && row.sends == 0 && !inFlight.contains(row.id) ? row : nil }
        if let earlier, replaceable == nil, base != nil, earlier.state == .pending || earlier.state == .leased {
            let shownBase: F
            do {
                shownBase = try JSONDecoder().decode(F.self, from: try RecordProjection.editPayload(record: shown.payload, id: key, action: action))
            } catch {
                throw OutboxError.invalidPayload([FieldError(pointer: JSONPointer.root, code: "invalid", detail: "the shown \(action.recordType) \(id) cannot be read as \(F.formName): \(error)")])
            }
            return try await save(payload, attachments: attachments, documentID: environment.newID(), base: (shownBase, "\"\(base!.version)\""))
        }
        return try await save(
            payload, attachments: attachments, documentID: replaceable?.documentID ?? environment.newID(),
            base: basePayload.map { ($0, "\"\(base!.version)\"") })
    }

    // MARK: Acknowledgements

    /// After a submission of a bound form is confirmed: the record the server now holds goes
    /// into the store (unless a newer one is there), and edits waiting on a record created
    /// offline take the version it landed with as their base.
    func storeAcknowledgedRecord(_ row: OutboxStore.Row, _ ack: ServerAcknowledgement, now: Int64) throws {
        guard let form = row.form, let action = registry[form]?.recordAction else { return }
        if let change = ack.record, change.type == action.recordType, let fields = change.fields,
            try !store.hasTombstone(workspace: row.workspace, type: change.type, id: change.id)
        {
            try applyChange(change, fields: fields, workspace: row.workspace)
        }
        guard action.kind == .creates, let placeholder = row.produces, let serverID = ack.serverID else { return }
        noteRecord(action.recordType, placeholder, serverID)
        for dependent in try store.dependents(of: placeholder) {
            guard var edit = try store.item(dependent), edit.workspace == row.workspace, edit.baseVersion == nil, edit.state != .confirmed,
                let editForm = edit.form, let editAction = registry[editForm]?.recordAction, editAction.kind == .edits,
                editAction.recordType == action.recordType, let payload = edit.payload,
                RecordProjection.editedID(form: payload, action: editAction) == placeholder
            else { continue }
            edit.baseVersion = ack.version ?? ack.record.map { "\"\($0.version)\"" }
            if let fields = ack.record?.fields { edit.basePayload = try? RecordProjection.editPayload(record: fields, id: serverID, action: editAction) }
            try store.update(edit, now: now)
        }
    }

    /// Writes one pulled or acknowledged record into the store, index included.
    func applyChange(_ change: RecordChange, fields: Data, workspace: String, index: [RecordIndexEntry]? = nil) throws {
        let entry = recordTypes[change.type]
        let index = index ?? entry.flatMap { try? $0.indexEntries(fields) } ?? []
        let written = try store.upsertRecord(
            workspace: workspace, type: change.type, id: change.id, version: change.version, payload: fields, index: index,
            oldIndex: { old in entry.flatMap { try? $0.indexEntries(old) } ?? [] })
        if written { noteRecord(change.type, change.id) }
    }
}
