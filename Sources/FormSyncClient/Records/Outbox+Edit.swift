import Foundation
import FormSyncModel

extension Outbox {
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
    public func edit<F: FormPayload>(_ form: F.Type, id: Int64, attachments: [Attachment] = [], _ change: (inout F) throws -> Void) async throws -> ItemID {
        guard let action = F.recordAction, action.kind == .edits else { throw OutboxError.notAnEditForm(F.formName) }
        let workspace = self.workspace
        let (key, base, shown, earlier) = try storage { () throws -> (Int64, OutboxStore.StoredRecord?, (version: Int, payload: Data)?, OutboxStore.Row?) in
            let key = id < 0 ? (try store.resolvedID(id, workspace: workspace) ?? id) : id
            let base = key > 0 ? try store.storedRecord(workspace: workspace, type: action.recordType, id: key) : nil
            let shown = try RecordStore.overlay(store, registry: registry, type: action.recordType, workspace: workspace)[key] ?? base.map { ($0.version, $0.payload) }
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
        let replaceable = earlier.flatMap { row in (row.state == .pending || row.state == .blocked) && row.sends == 0 && !lifecycle.inFlight.contains(row.id) ? row : nil }
        if let earlier, replaceable == nil, base != nil, earlier.state == .pending || earlier.state == .leased {
            let shownBase: F
            do {
                shownBase = try JSONDecoder().decode(F.self, from: try RecordProjection.editPayload(record: shown.payload, id: key, action: action))
            } catch {
                throw OutboxError.invalidPayload([FieldError(pointer: JSONPointer.root, code: "invalid", detail: "the shown \(action.recordType) \(id) cannot be read as \(F.formName): \(error)")])
            }
            return ItemID(try await save(payload, attachments: attachments, documentID: environment.newID(), base: (shownBase, "\"\(base!.version)\"")))
        }
        return ItemID(try await save(
            payload, attachments: attachments, documentID: replaceable?.documentID ?? environment.newID(),
            base: basePayload.map { ($0, "\"\(base!.version)\"") }))
    }
}
