import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

/// Records on the reference server (docs/PROTOCOL.md, "Records and the change feed"): the back
/// office's writes, checking a record against its type, applying the submissions of forms that
/// edit a record, and one record read back (`GET /records/{type}/{id}`).
struct RecordService: ServerPart {
    let context: ServerContext

    /// The back office's write of one record (under the lock, in a transaction). Refused: a
    /// workspace no token could name, a type the server has no record spec for (a device could
    /// not store it, and would stop at it on every pull), fields that break the type's rules, an
    /// id outside 1 to 2^53 − 1, and an id that another type or a document already holds (ids
    /// are unique across the server).
    func seedRecord(_ seed: SyncServer.RecordSeed) throws -> SyncServer.Record {
        guard WireSyntax.isIdentifier(seed.workspace) else {
            throw SyncServer.RecordError.malformed(
                "a record's workspace is 1 to 128 characters from A-Z a-z 0-9 - . _ ~ : (not \"\(seed.workspace.prefix(40))\")")
        }
        guard recordTypes[seed.type] != nil else {
            throw SyncServer.RecordError.malformed(
                "this server has no record spec for type \"\(seed.type.prefix(140))\" (it holds \(recordTypes.names.joined(separator: ", ")))"
            )
        }
        let prepared: (payload: Data, scope: String)
        switch prepareRecord(seed.type, payload: seed.fields) {
        case .success(let value): prepared = value
        case .failure(let refusal): throw refusal.error
        }
        let id: Int64
        if let given = seed.id {
            guard given >= 1 && given <= SyncServer.maxEntityID else {
                throw SyncServer.RecordError.malformed("a record id is a whole number from 1 to 2^53 - 1")
            }
            if let holder = try store.holder(ofID: given), holder != seed.type {
                throw SyncServer.RecordError.malformed(
                    "id \(given) already belongs to \(holder == "" ? "a document" : "a \(holder) record"); ids are unique across the server"
                )
            }
            id = given
        } else {
            id = try store.nextEntityID()
        }
        let version = try versions.putRecord(
            workspace: seed.workspace, type: seed.type, id: id, scope: prepared.scope, payload: prepared.payload,
            files: files.fileIDs(ofRecord: seed.type, prepared.payload),
            by: .backOffice(seed.author, at: now()))
        return SyncServer.Record(type: seed.type, id: id, version: version, scope: prepared.scope, fields: prepared.payload)
    }

    /// A refused record write: the reply for a device, the error for the back office.
    struct Refusal: Error {
        var response: HTTPResponse
        var error: SyncServer.RecordError
    }

    /// Checks a record's fields against its type (when the server knows the type) and finds its
    /// scope; canonical JSON out.
    func prepareRecord(_ type: String, payload: Data) -> Result<(payload: Data, scope: String), Refusal> {
        guard let slices = JSONObjectSlices(payload) else {
            let detail = "the \(type) record is not a JSON object"
            return .failure(
                Refusal(response: .problem(.invalidRecord, detail: detail), error: .malformed(detail))
            )
        }
        guard let entry = recordTypes[type] else {
            // A type this server has no spec for is stored as given, once it is proven JSON.
            guard (try? JSONSerialization.jsonObject(with: slices.data)) != nil else {
                let detail = "the \(type) record is not valid JSON"
                return .failure(
                    Refusal(
                        response: .problem(.invalidRecord, detail: detail), error: .malformed(detail))
                )
            }
            return .success((slices.data, ""))
        }
        let errors = entry.validate(slices.data)
        guard errors.isEmpty else {
            return .failure(
                Refusal(
                    response: .problem(
                        .invalidRecord, detail: "the \(type) record would break \(errors.count) rule(s)",
                        errors: errors.map { ["pointer": $0.pointer, "code": $0.code, "detail": $0.detail] }),
                    error: .invalid(errors)))
        }
        return .success((slices.data, entry.scopeValue(slices.data) ?? ""))
    }

    static func entityObject(type: String, id: Int64, version: Int, payload: Data) -> [String: Any] {
        ["type": type, "id": id, "version": version, "record": (try? JSONSerialization.jsonObject(with: payload)) ?? [:]]
    }

    /// The record a form creates, as the reply's `entity`, when it exists.
    func entity(_ entry: FormRegistry.Entry, id: Int64, workspace: String) throws -> [String: Any]? {
        guard let action = entry.recordAction, let record = try store.record(workspace: workspace, type: action.recordType, id: id) else {
            return nil
        }
        return Self.entityObject(type: record.type, id: record.id, version: record.version, payload: record.payload)
    }

    /// `GET /records/{type}/{id}`: one record in the principal's scope, with its ETag.
    func recordRoute(_ request: HTTPRequest) -> HTTPResponse {
        let caller: Caller
        switch self.caller(of: request) {
        case .allowed(let found): caller = found
        case .refused(let refusal): return refusal
        }
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, let id = Int64(parts[3]), id > 0 else {
            return .problem(.noRoute, detail: "use /records/{type}/{id}")
        }
        let type = String(parts[2])
        return locked {
            guard let record = (try? store.record(workspace: caller.workspace, type: type, id: id)) ?? nil, caller.sees(scope: record.scope)
            else {
                return .problem(.noSuchRecord, detail: "no \(type) \(id) here")
            }
            return .json(
                200, Self.entityObject(type: record.type, id: record.id, version: record.version, payload: record.payload),
                headers: [("ETag", WireSyntax.etag(record.version))])
        }
    }

    // MARK: Edits

    /// Applies an edit form's submission to the record its key names, under `If-Match`. Runs
    /// inside the ledger's transaction.
    func submitEdit(
        _ request: HTTPRequest, entry: FormRegistry.Entry, action: RecordAction, payload: Data, caller: Caller,
        ifMatch: (any: Bool, strong: [String])?, author: Authorship
    ) throws -> HTTPResponse {
        let workspace = caller.workspace
        let documentID = request.header(ProtocolHeader.document)!
        guard let id = RecordProjection.editedID(form: payload, action: action), id > 0 else { return Self.keyMissing(action, "an edit") }
        // A record in another principal's scope does not exist for this one (as for
        // GET /records): an edit of a delivery reassigned meanwhile is refused with 404, and
        // no reply carries another courier's record.
        let current = try store.record(workspace: workspace, type: action.recordType, id: id).flatMap {
            caller.sees(scope: $0.scope) ? $0 : nil
        }
        if let existing = store.document(documentID) {
            // The edit was applied before: the same edit again is a repeat, another is refused.
            let stored = try entry.remap(existing.payload, [:]).payload
            guard let current else {
                return .problem(.noSuchRecord, detail: "\(action.recordType) \(id) no longer exists")
            }
            if stored == payload {
                return try editReply(workspace: workspace, 200, documentID: documentID, entry: entry, action: action, record: current)
            }
            return try editReply(
                workspace: workspace,
                409, documentID: documentID, entry: entry, action: action, record: current, code: .documentExists,
                detail: "document \(documentID) already holds another edit; send a new edit with If-Match")
        }
        guard let current else {
            return .problem(.noSuchRecord, detail: "\(action.recordType) \(id) does not exist (it may have been deleted)")
        }
        guard let ifMatch else {
            return .problem(
                .ifMatchRequired, detail: "an edit of \(action.recordType) \(id) needs If-Match with the version it was based on")
        }
        guard ifMatch.any || ifMatch.strong.contains(WireSyntax.etag(current.version)) else {
            return try editReply(
                workspace: workspace, 412, documentID: documentID, entry: entry, action: action, record: current, code: .staleVersion)
        }
        // The server's own value stands for every field it is the authority of; an edit that
        // tried to change one is a conflict for a person, not a silent overwrite.
        let serverView = try RecordProjection.editPayload(record: current.payload, id: id, action: action)
        let merged = try entry.merge(serverView, payload, serverView)
        if !merged.conflicts.isEmpty {
            return try editReply(
                workspace: workspace,
                409, documentID: documentID, entry: entry, action: action, record: current, code: .authorityConflict,
                detail: "the edit changes \(merged.conflicts.map(\.pointer).joined(separator: ", ")), which the server owns")
        }
        let updated: (payload: Data, scope: String)
        switch prepareRecord(
            action.recordType, payload: try RecordProjection.apply(form: merged.merged, to: current.payload, action: action))
        {
        case .success(let value): updated = value
        case .failure(let refusal): return refusal.response
        }
        let version = try versions.putRecord(
            workspace: workspace, type: action.recordType, id: id, scope: updated.scope, payload: updated.payload,
            files: files.fileIDs(ofRecord: action.recordType, updated.payload), by: author)
        _ = try versions.createDocument(
            documentID, form: entry.name, formVersion: entry.version, workspace: workspace, owner: caller.principal,
            payload: merged.merged, by: author)
        let record = StoredRecord(type: action.recordType, id: id, version: version, scope: updated.scope, payload: updated.payload)
        return try editReply(workspace: workspace, 200, documentID: documentID, entry: entry, action: action, record: record)
    }

    // MARK: Deletes

    /// Applies a delete form's submission to the record its key names, under `If-Match`, when
    /// the record's type lets devices delete it. A record already gone (deleted by someone
    /// else, or out of the caller's scope) is what the delete wanted: `200`, the record named
    /// deleted. Runs inside the ledger's transaction.
    func submitDelete(
        _ request: HTTPRequest, entry: FormRegistry.Entry, action: RecordAction, payload: Data, caller: Caller,
        ifMatch: (any: Bool, strong: [String])?, author: Authorship
    ) throws -> HTTPResponse {
        let workspace = caller.workspace
        let documentID = request.header(ProtocolHeader.document)!
        guard let id = RecordProjection.editedID(form: payload, action: action), id > 0 else { return Self.keyMissing(action, "a delete") }
        guard recordTypes[action.recordType]?.devicesMayDelete == true else {
            return .problem(
                .deleteNotAllowed, detail: "devices may not delete \(action.recordType) records here; the back office deletes them")
        }
        if let existing = store.document(documentID) {
            let stored = try entry.remap(existing.payload, [:]).payload
            guard stored == payload else {
                return .problem(.documentExists, detail: "document \(documentID) already holds another delete; send a new document")
            }
            return deleteReply(documentID: documentID, entry: entry, action: action, id: id)
        }
        let current = try store.record(workspace: workspace, type: action.recordType, id: id).flatMap {
            caller.sees(scope: $0.scope) ? $0 : nil
        }
        if let current {
            guard let ifMatch else {
                return .problem(
                    .ifMatchRequired, detail: "a delete of \(action.recordType) \(id) needs If-Match with the version it was decided on")
            }
            guard ifMatch.any || ifMatch.strong.contains(WireSyntax.etag(current.version)) else {
                return try editReply(
                    workspace: workspace, 412, documentID: documentID, entry: entry, action: action, record: current, code: .staleVersion)
            }
            _ = try versions.deleteRecord(workspace: workspace, type: action.recordType, id: id, by: author)
        }
        _ = try versions.createDocument(
            documentID, form: entry.name, formVersion: entry.version, workspace: workspace, owner: caller.principal, payload: payload,
            by: author)
        return deleteReply(documentID: documentID, entry: entry, action: action, id: id)
    }

    /// The refusal of an edit or a delete whose key names no record id.
    static func keyMissing(_ action: RecordAction, _ what: String) -> HTTPResponse {
        .problem(
            .invalidPayload, detail: "\(what) names its record in \(action.keyField ?? "its key")",
            errors: [["pointer": "#/\(action.keyField ?? "")", "code": "required", "detail": "the record's id is required"]])
    }

    /// A reply about a deleted record: the form's view of it (its key), and the record named
    /// deleted (`entity`) for the device's store.
    func deleteReply(documentID: String, entry: FormRegistry.Entry, action: RecordAction, id: Int64) -> HTTPResponse {
        .json(
            200,
            [
                Acknowledgement.documentID: documentID, Acknowledgement.id: id, Acknowledgement.form: entry.name,
                Acknowledgement.formVersion: entry.version, Acknowledgement.record: [action.keyField ?? "id": id],
                Acknowledgement.entity: ["type": action.recordType, "id": id, "deleted": true],
            ])
    }

    /// A reply about an edited record: the record as the form sees it (`record`), its version
    /// as the ETag, and the whole record (`entity`) for the device's store.
    func editReply(
        workspace: String, _ status: Int, documentID: String, entry: FormRegistry.Entry, action: RecordAction, record: StoredRecord,
        code: ProblemCode? = nil, detail: String? = nil
    ) throws -> HTTPResponse {
        let view = try RecordProjection.editPayload(record: record.payload, id: record.id, action: action)
        let object: [String: Any] = [
            Acknowledgement.documentID: documentID, Acknowledgement.id: record.id, Acknowledgement.form: entry.name,
            Acknowledgement.formVersion: entry.version,
            Acknowledgement.version: WireSyntax.etag(record.version),
            Acknowledgement.record: (try? JSONSerialization.jsonObject(with: view)) ?? [:],
            Acknowledgement.entity: Self.entityObject(type: record.type, id: record.id, version: record.version, payload: record.payload),
        ]
        let headers = [("ETag", WireSyntax.etag(record.version))]
        guard let code else { return .json(status, object, headers: headers) }
        // Whose version the device's edit meets, so that its person sees who changed it.
        let lastChange = try HistoryService(context: context).lastChangeMember(workspace: workspace, type: record.type, id: record.id)
        return .problem(code, detail: detail, extra: object.merging(lastChange) { a, _ in a }, headers: headers)
    }
}
