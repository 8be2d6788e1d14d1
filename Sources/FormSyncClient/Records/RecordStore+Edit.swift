@_spi(Generated) import FormSyncModel
import Foundation

extension RecordStore {
    /// What an edit starts from: the record as the device shows it, read through the edit
    /// form, the base it is sent against, and the document it is queued as.
    struct EditDraft<F: FormPayload>: Sendable {
        var payload: F
        /// The record as last pulled (or as shown, behind an earlier edit already on its way)
        /// and its version, sent as `If-Match`; nil for a record that has not landed.
        var base: (payload: F, version: String)?
        /// The unsent edit of this record this one replaces, or a new document.
        var documentID: String
    }

    /// Reads record `id` for an edit through `F`, inside the outbox's turn. An unsent edit of the
    /// record (not in `inFlight`) is replaced; one already sent (or parked) stands, and this
    /// edit is a new document behind it, based on the record as shown with that earlier edit
    /// applied: the server will hold the earlier edit by the time this one arrives, and it is
    /// not a change made by someone else (merging against the pulled record would take the
    /// device's own earlier edit for a concurrent one). A record created offline is read by
    /// the server id it landed as.
    func editDraft<F: FormPayload>(_ form: F.Type, id: Int64, inFlight: Set<Int64>, newID: () -> String) throws -> EditDraft<F> {
        guard let action = F.recordAction, action.kind == .edits || action.kind == .deletes else {
            throw OutboxError.notAnEditForm(F.formName)
        }
        let (key, base, shown, earlier) = try OutboxDatabase.mapping {
            () throws -> (Int64, OutboxStore.StoredRecord?, (version: Int, payload: Data)?, OutboxStore.Row?) in
            let key = id < 0 ? (try store.resolvedID(id, workspace: workspace) ?? id) : id
            let base = key > 0 ? try store.storedRecord(view: view, type: action.recordType, id: key) : nil
            let shown =
                try Self.overlay(store, registry: registry, type: action.recordType, workspace: workspace, principal: principal)[key]
                ?? base.map { ($0.version, $0.payload) }
            let earlier = try store.unconfirmedSubmissions(workspace: workspace, principal: principal, forms: [F.formName]).last { row in
                guard let payload = row.payload, let edited = RecordProjection.editedID(form: payload, action: action) else { return false }
                let resolved = edited < 0 ? ((try? store.resolvedID(edited, workspace: workspace)) ?? nil) ?? edited : edited
                return resolved == key
            }
            return (key, base, shown, earlier)
        }
        // (A record an unsent delete removes is gone for every later write.)
        guard let shown, shown.version >= 0 else { throw OutboxError.noSuchRecord(type: action.recordType, id: id) }
        func read(_ record: Data, as what: String) throws -> F {
            do {
                return try JSONDecoder().decode(F.self, from: try RecordProjection.editPayload(record: record, id: key, action: action))
            } catch {
                throw OutboxError.invalidPayload([
                    FieldError(
                        pointer: JSONPointer.root, code: "invalid",
                        detail: "the \(what) \(action.recordType) \(id) cannot be read as \(F.formName): \(error)")
                ])
            }
        }
        let payload = try read(shown.payload, as: "stored")
        let replaceable = earlier.flatMap { row in
            (row.state == .pending || row.state == .blocked) && row.sends == 0 && !inFlight.contains(row.id) ? row : nil
        }
        guard let base else { return EditDraft(payload: payload, base: nil, documentID: replaceable?.documentID ?? newID()) }
        if let earlier, replaceable == nil, earlier.state == .pending || earlier.state == .leased {
            return EditDraft(payload: payload, base: (try read(shown.payload, as: "shown"), "\"\(base.version)\""), documentID: newID())
        }
        return EditDraft(
            payload: payload, base: (try read(base.payload, as: "stored"), "\"\(base.version)\""),
            documentID: replaceable?.documentID ?? newID())
    }
}
