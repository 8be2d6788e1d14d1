@_spi(Generated) import FormSyncModel
import Foundation

extension ItemLifecycle {
    /// Parks every unsent edit of a record the server deleted (a tombstone in its person's view,
    /// no record there): sent, it could only fail. One sent before (its reply lost) may have
    /// landed, and goes again for the ledger's answer. The reason says what happened and what to do;
    /// the edit's key field carries the error. Returns how many it parked.
    func parkEditsOfDeletedRecords(now: Int64) throws -> Int {
        let forms = registry.names.filter { registry[$0]?.recordAction?.kind == .edits }
        guard !forms.isEmpty else { return 0 }
        var parked = 0
        for var row in try store.openSubmissions(workspace: workspace, forms: forms)
        where (row.state == .pending || row.state == .blocked) && row.sends == 0 && !inFlight.contains(row.id) {
            guard let form = row.form, let action = registry[form]?.recordAction, let payload = row.payload,
                var id = RecordProjection.editedID(form: payload, action: action)
            else { continue }
            if id < 0 {
                guard let server = try store.resolvedID(id, workspace: row.workspace) else { continue }
                id = server
            }
            let view = Self.view(of: row)
            guard try store.hasTombstone(view: view, type: action.recordType, id: id),
                try store.storedRecord(view: view, type: action.recordType, id: id) == nil
            else { continue }
            let reason =
                "\(action.recordType) \(id) was deleted on the server; this edit has nothing left to change: discard it, or capture what it held anew"
            try park(
                &row, as: .rejected, reason: reason,
                fieldErrors: [
                    FieldError(pointer: JSONPointer.appending(JSONPointer.root, action.keyField ?? ""), code: "deleted", detail: reason)
                ],
                now: now)
            parked += 1
        }
        return parked
    }
}
