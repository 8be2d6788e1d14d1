import FormSyncHTTP
import FormSyncProtocol
import Foundation

/// Every write of a document or a record goes through here, so that each version is kept with
/// its author in the same transaction (`HistoryStore`): nothing else calls the store's
/// document and record writes (a house rule test holds that).
struct VersionWriter: ServerPart {
    let context: ServerContext

    /// The author of a request's write: the caller's principal and device, the server's time,
    /// and the device's capture time if it told one.
    func author(_ caller: Caller, capturedAt: Int64?, via: ChangeAuthor.Via, document: String?) -> Authorship {
        Authorship(principal: caller.principal, device: caller.device, at: now(), capturedAt: capturedAt, via: via, documentID: document)
    }

    func createDocument(
        _ documentID: String, form: String, formVersion: Int, workspace: String, owner: String, payload: Data, by author: Authorship
    ) throws -> SyncServer.Document {
        let document = try store.createDocument(
            documentID, form: form, formVersion: formVersion, workspace: workspace, principal: owner, payload: payload, at: author.at)
        try store.history.noteDocumentEvent(
            StoredDocumentEvent(
                workspace: workspace, documentID: documentID, entityID: document.id, form: form, formVersion: formVersion,
                event: .accepted, version: document.version, payload: payload, author: author, review: nil, owner: owner))
        return document
    }

    /// A document's new payload (version + 1). `countingWrite`: a device's write applied.
    func updateDocument(_ documentID: String, payload: Data, countingWrite: Bool, by author: Authorship) throws -> SyncServer.Document {
        let document = try store.updateDocument(documentID, payload: payload, countingWrite: countingWrite, at: author.at)
        let owner = store.owner(of: documentID)
        try store.history.noteDocumentEvent(
            StoredDocumentEvent(
                workspace: owner?.workspace ?? "", documentID: documentID, entityID: document.id, form: document.form,
                formVersion: document.formVersion, event: author.via == .fileCompleted ? .fileCompleted : .edited,
                version: document.version, payload: payload, author: author, review: nil, owner: owner?.principal ?? nil))
        return document
    }

    /// Writes a record's new state and keeps the version; returns the new version.
    func putRecord(
        workspace: String, type: String, id: Int64, scope: String, payload: Data, files: [Int64], by author: Authorship
    ) throws -> Int {
        let version = try store.putRecord(
            workspace: workspace, type: type, id: id, scope: scope, payload: payload, files: files, at: author.at)
        let event: HistoryEvent = author.via == .fileCompleted ? .fileCompleted : version == 1 ? .created : .edited
        try store.history.addRecordVersion(
            StoredRecordVersion(
                workspace: workspace, type: type, id: id, version: version, event: event, payload: payload, author: author))
        return version
    }

    /// Removes a record and keeps its deletion; false when there was none.
    func deleteRecord(workspace: String, type: String, id: Int64, by author: Authorship) throws -> Bool {
        guard let old = try store.record(workspace: workspace, type: type, id: id),
            try store.deleteRecord(workspace: workspace, type: type, id: id)
        else { return false }
        try store.history.addRecordVersion(
            StoredRecordVersion(
                workspace: workspace, type: type, id: id, version: old.version, event: .deleted, payload: nil, author: author))
        return true
    }

    /// Keeps a review of `document`'s current version (of `workspace`, created by `owner`); the
    /// event's id.
    func review(
        _ document: SyncServer.Document, _ review: StoredReview, workspace: String, owner: String?, by author: Authorship
    ) throws -> Int64 {
        try store.history.addDocumentEvent(
            StoredDocumentEvent(
                workspace: workspace, documentID: document.documentID, entityID: document.id, form: document.form,
                formVersion: document.formVersion, event: .reviewed, version: document.version, payload: nil, author: author,
                review: review, owner: owner))
    }
}
