import FormSyncModel
import Foundation

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
    public func edit<F: FormPayload>(
        _ form: F.Type, id: Int64, attachments: [Attachment] = [], _ change: (inout F) throws -> Void
    ) async throws -> ItemID {
        let inFlight = lifecycle.inFlight
        let newID = environment.newID
        guard F.recordAction?.kind == .edits else { throw OutboxError.notAnEditForm(F.formName) }
        var draft = try withRecords { try $0.editDraft(F.self, id: id, inFlight: inFlight, newID: newID) }
        try change(&draft.payload)
        return ItemID(try await save(draft.payload, attachments: attachments, documentID: draft.documentID, base: draft.base))
    }

    /// Deletes the record `id` through the form `D` (`deletes:` in its spec; the record type must
    /// let devices delete it): the record is gone from every read at once, and the form is
    /// queued with the record's version as `If-Match`. Edits queued before it go first (same
    /// lane); a later `edit` of the record finds none. If the record changed on the server in
    /// between, the delete is parked as a conflict for a person (resolving it deletes the newer
    /// version); if someone else deleted it first, the delete is done. `fill` sets the form's
    /// other fields (a reason, say).
    ///
    /// - Returns: the outbox item's id.
    @discardableResult
    public func delete<D: FormPayload>(_ form: D.Type, id: Int64, _ fill: (inout D) throws -> Void = { _ in }) async throws -> ItemID {
        guard D.recordAction?.kind == .deletes else { throw OutboxError.notADeleteForm(D.formName) }
        let inFlight = lifecycle.inFlight
        let newID = environment.newID
        var draft = try withRecords { try $0.editDraft(D.self, id: id, inFlight: inFlight, newID: newID) }
        try fill(&draft.payload)
        return ItemID(try await save(draft.payload, documentID: draft.documentID, base: draft.base))
    }
}
