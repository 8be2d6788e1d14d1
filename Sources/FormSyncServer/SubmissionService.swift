import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

/// Submissions (`POST` to a form's endpoint, docs/PROTOCOL.md §1–§3): a payload upgraded,
/// validated and made canonical outside the lock, then, inside the ledger's transaction, its
/// document created or edited under `If-Match` with the server's authority over its fields, its
/// files checked, and the record it creates or edits written with it. Also `GET /documents/{id}`.
struct SubmissionService: ServerPart {
    let context: ServerContext

    /// A submission as far as it can be checked without the store: its form, its payload
    /// upgraded, validated and canonical, or the reply that refuses it.
    enum CheckedSubmission {
        case refused(HTTPResponse)
        case failed(any Error)
        /// `capturedAt`: the device's capture time (`FormSync-Captured-At`), read once here.
        case accepted(
            name: String, entry: FormRegistry.Entry, canonical: (payload: Data, endpoint: String), files: [FileUse], capturedAt: Int64?)
    }

    /// The part of `submit` that depends on the request alone; runs outside the lock.
    func checkSubmission(_ request: HTTPRequest) -> CheckedSubmission {
        guard let formHeader = request.header(ProtocolHeader.form), let (name, version) = WireSyntax.parseForm(formHeader) else {
            return .refused(.problem(.badFormHeader, detail: "FormSync-Form: Name; version=N is required"))
        }
        guard let entry = registry[name] else {
            return .refused(.problem(.unknownForm, detail: "this server does not accept form \(name)"))
        }
        let captured = request.header(ProtocolHeader.capturedAt)
        let capturedAt = captured.flatMap(WireSyntax.parseTimestamp)
        if captured != nil, capturedAt == nil {
            return .refused(
                .problem(.malformed, detail: "\(ProtocolHeader.capturedAt) is an RFC 3339 time, such as 2026-12-06T10:41:07Z"))
        }
        // Every older version is accepted and brought to the current one by the spec's
        // upgraders before anything is checked; a future version is refused in words.
        guard version <= entry.version else {
            return .refused(
                .problem(
                    .unknownFormVersion,
                    detail: "form \(name) is at version \(entry.version) here; version \(version) is newer than this server knows"))
        }
        guard version >= 1, let body = try? entry.upgrade(request.body, from: version) else {
            return .refused(
                .problem(
                    .invalidPayload, detail: "a version \(version) payload of \(name) cannot be brought to version \(entry.version)",
                    errors: [["pointer": "#", "code": "upgrade", "detail": "the payload could not be upgraded"]]))
        }
        let admission: FormRegistry.Entry.Admission
        let files: [FileUse]
        do {
            // One decoding for the rules, the placeholders, the canonical bytes and the files. The
            // clock is unknown: a constraint reading today() or now() is the device's to check.
            (admission, files) = try FormClock.$current.withValue(.unknown) { try FileUse.gathering { try entry.admit(body) } }
        } catch {
            return .failed(error)
        }
        switch admission {
        case .invalid(let errors):
            let upgraded = version < entry.version ? " (after upgrading it from version \(version))" : ""
            return .refused(
                .problem(
                    .invalidPayload, detail: "the payload breaks \(errors.count) rule(s)\(upgraded)",
                    errors: errors.map { ["pointer": $0.pointer, "code": $0.code, "detail": $0.detail] }))
        case .holdsPlaceholders(let placeholders):
            return .refused(
                .problem(
                    .placeholder,
                    detail: "the payload still holds placeholder ids \(placeholders); upload the files and create the records first",
                    errors: [
                        [
                            "pointer": "#", "code": ProblemCode.placeholder.rawValue,
                            "detail": "placeholder ids must be replaced by server ids",
                        ]
                    ]))
        case .admitted(let payload, let endpoint):
            guard endpoint == request.path else {
                return .refused(
                    .problem(.wrongPath, detail: "the payload belongs at \(endpoint), not \(request.path)"))
            }
            return .accepted(name: name, entry: entry, canonical: (payload, endpoint), files: files, capturedAt: capturedAt)
        }
    }

    /// Creates or edits a document, with its files checked against what is stored and its
    /// pending files noted. Runs inside the ledger's transaction.
    func submit(_ request: HTTPRequest, _ checked: CheckedSubmission, caller: Caller) throws -> HTTPResponse {
        let documentID = request.header(ProtocolHeader.document)!
        let (name, entry, uses, capturedAt): (String, FormRegistry.Entry, [FileUse], Int64?)
        var canonical: (payload: Data, endpoint: String)
        switch checked {
        case .refused(let response): return response
        case .failed(let error): throw error
        case .accepted(let n, let e, let c, let f, let t): (name, entry, canonical, uses, capturedAt) = (n, e, c, f, t)
        }
        if let refusal = access.boundElsewhere(documentID, form: name, caller: caller) { return refusal }
        let pending: [FileUse]
        switch try files.checkFiles(uses, payload: canonical.payload, caller: caller) {
        case .refused(let refusal): return refusal
        case .checked(let payload, let waiting): (canonical.payload, pending) = (payload, waiting)
        }
        let response = try write(request, name: name, entry: entry, canonical: canonical, caller: caller, capturedAt: capturedAt)
        if (200..<300).contains(response.status), store.document(documentID) != nil {
            var record: (type: String, id: Int64)?
            if let action = entry.recordAction {
                if action.kind == .creates, let document = store.document(documentID) {
                    record = (action.recordType, document.id)
                } else if action.kind == .edits, let id = RecordProjection.editedID(form: canonical.payload, action: action) {
                    record = (action.recordType, id)
                }
            }
            // A file in an item of a list that created records completes that item's record.
            let created = entry.listRecordActions.isEmpty || pending.isEmpty ? [] : try store.createdRecords(document: documentID)
            try files.notePendingFiles(pending, documentID: documentID, caller: caller) { pointer in
                lists.record(ofPointer: pointer, created: created, formRecord: record)
            }
        }
        return response
    }

    /// `submit`'s write, once its files are checked.
    private func write(
        _ request: HTTPRequest, name: String, entry: FormRegistry.Entry, canonical: (payload: Data, endpoint: String), caller: Caller,
        capturedAt: Int64?
    ) throws -> HTTPResponse {
        let documentID = request.header(ProtocolHeader.document)!
        let workspace = caller.workspace
        let author = versions.author(caller, capturedAt: capturedAt, via: .submission, document: documentID)
        let ifMatch = request.header(ProtocolHeader.ifMatch).flatMap(WireSyntax.entityTags)
        if let action = entry.recordAction, action.kind == .deletes {
            return try records.submitDelete(
                request, entry: entry, action: action, payload: canonical.payload, caller: caller, ifMatch: ifMatch,
                author: versions.author(caller, capturedAt: capturedAt, via: .recordEdit, document: documentID))
        }
        if let action = entry.recordAction, action.kind == .edits {
            return try records.submitEdit(
                request, entry: entry, action: action, payload: canonical.payload, caller: caller, ifMatch: ifMatch,
                author: versions.author(caller, capturedAt: capturedAt, via: .recordEdit, document: documentID))
        }
        var createdRecord: (type: String, payload: Data, scope: String)?
        if let action = entry.recordAction, action.kind == .creates {
            switch records.prepareRecord(
                action.recordType, payload: try RecordProjection.apply(form: canonical.payload, to: nil, action: action))
            {
            case .success(let prepared): createdRecord = (action.recordType, prepared.payload, prepared.scope)
            case .failure(let refusal): if store.document(documentID) == nil { return refusal.response }
            }
        }
        var listRecords: [ListRecordService.Prepared] = []
        if !entry.listRecordActions.isEmpty, store.document(documentID) == nil {
            switch try lists.prepare(entry, payload: canonical.payload) {
            case .ready(let prepared): listRecords = prepared
            case .refused(let response): return response
            }
        }
        if let existing = store.document(documentID) {
            guard let ifMatch else {
                // A create for a document already held: the same record is an idempotent repeat;
                // a different one must not be dropped silently, nor applied blindly.
                let stored = try entry.remap(existing.payload, [:]).payload
                if stored == canonical.payload {
                    return recordResponse(
                        existing, status: 200, entity: try records.entity(entry, id: existing.id, workspace: workspace),
                        created: entry.listRecordActions.isEmpty
                            ? nil : try lists.replies(entry, document: documentID, workspace: workspace))
                }
                return recordResponse(
                    existing, status: 409, code: .documentExists,
                    detail: "document \(documentID) already exists with other content; edit it with If-Match")
            }
            guard ifMatch.any || ifMatch.strong.contains(WireSyntax.etag(existing.version)) else {
                return recordResponse(existing, status: 412, code: .staleVersion)
            }
            // An edit: the server's own value stands for every field it is the authority of, and
            // an edit that tried to change one is a conflict for a person (as for a record's
            // edit), never a 200 that keeps the server's value while the device shows its own.
            let stored = existing.payload
            let merge = try entry.merge(stored, canonical.payload, stored)
            if !merge.conflicts.isEmpty {
                return recordResponse(
                    existing, status: 409, code: .authorityConflict,
                    detail: "the edit changes \(merge.conflicts.map(\.pointer).joined(separator: ", ")), which the server owns")
            }
            let merged = merge.merged
            // A document that created a record edits the record too.
            var entity: [String: Any]?
            if let action = entry.recordAction, action.kind == .creates,
                let current = try store.record(workspace: workspace, type: action.recordType, id: existing.id)
            {
                switch records.prepareRecord(
                    action.recordType, payload: try RecordProjection.apply(form: merged, to: current.payload, action: action))
                {
                case .success(let prepared):
                    let version = try versions.putRecord(
                        workspace: workspace, type: action.recordType, id: existing.id, scope: prepared.scope, payload: prepared.payload,
                        files: files.fileIDs(ofRecord: action.recordType, prepared.payload), by: author)
                    entity = RecordService.entityObject(
                        type: action.recordType, id: existing.id, version: version, payload: prepared.payload)
                case .failure(let refusal):
                    return refusal.response
                }
            }
            let updated = try versions.updateDocument(documentID, payload: merged, countingWrite: true, by: author)
            return recordResponse(updated, status: 200, entity: entity)
        }
        if ifMatch != nil {
            return .problem(.noSuchDocument, detail: "document \(documentID) does not exist; it cannot be edited")
        }
        let created = try versions.createDocument(
            documentID, form: name, formVersion: entry.version, workspace: workspace, owner: caller.principal,
            payload: canonical.payload, by: author)
        var entity: [String: Any]?
        if let createdRecord {
            let version = try versions.putRecord(
                workspace: workspace, type: createdRecord.type, id: created.id, scope: createdRecord.scope, payload: createdRecord.payload,
                files: files.fileIDs(ofRecord: createdRecord.type, createdRecord.payload), by: author)
            entity = RecordService.entityObject(type: createdRecord.type, id: created.id, version: version, payload: createdRecord.payload)
        }
        let listReplies = try lists.create(listRecords, document: documentID, workspace: workspace, by: author)
        return recordResponse(created, status: 201, entity: entity, created: entry.listRecordActions.isEmpty ? nil : listReplies)
    }

    /// `GET /documents/{id}`: a document of the caller's workspace that the caller may read.
    func documentRoute(_ request: HTTPRequest) -> HTTPResponse {
        let caller: Caller
        switch self.caller(of: request) {
        case .allowed(let found): caller = found
        case .refused(let refusal): return refusal
        }
        let id = String(request.path.dropFirst("/documents/".count))
        return locked {
            guard WireSyntax.isIdentifier(id), let owner = store.owner(of: id), owner.form != nil, owner.workspace == caller.workspace,
                caller.owns(owner.principal),
                let document = store.document(id)
            else { return .problem(.noSuchDocument, detail: "no document \(id) here") }
            return recordResponse(document, status: 200)
        }
    }

    /// `created`: the records the document's lists created (`created_records`).
    func recordResponse(
        _ document: SyncServer.Document, status: Int, code: ProblemCode? = nil, detail: String? = nil, entity: [String: Any]? = nil,
        created: [[String: Any]]? = nil
    ) -> HTTPResponse {
        let headers = [("ETag", WireSyntax.etag(document.version)), ("Location", "/documents/\(document.documentID)")]
        if code == nil, entity == nil, created == nil, document.payload.first == UInt8(ascii: "{") {
            // The common reply, written around the stored payload's bytes (canonical JSON from
            // the form's encoder) rather than parsed and serialised again under the lock.
            typealias A = Acknowledgement
            var body = Data(
                "{\"\(A.documentID)\":\(WireSyntax.jsonString(document.documentID)),\"\(A.form)\":\(WireSyntax.jsonString(document.form)),"
                    .utf8)
            body.append(Data("\"\(A.formVersion)\":\(document.formVersion),\"\(A.id)\":\(document.id),\"\(A.record)\":".utf8))
            body.append(document.payload)
            body.append(Data(",\"\(A.version)\":\(WireSyntax.jsonString(WireSyntax.etag(document.version)))}".utf8))
            return HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: body)
        }
        let record = (try? JSONSerialization.jsonObject(with: document.payload)) ?? [:]
        var object: [String: Any] = [
            Acknowledgement.documentID: document.documentID, Acknowledgement.id: document.id, Acknowledgement.form: document.form,
            Acknowledgement.formVersion: document.formVersion, Acknowledgement.version: WireSyntax.etag(document.version),
            Acknowledgement.record: record,
        ]
        if let entity { object[Acknowledgement.entity] = entity }
        if let created { object[Acknowledgement.createdRecords] = created }
        guard let code else { return .json(status, object, headers: headers) }
        object[Acknowledgement.record] = nil
        // Whose version the device's write meets, so that its person sees who changed it.
        let lastChange = (try? HistoryService(context: context).lastChangeMember(document: document.documentID)) ?? [:]
        object.merge(lastChange) { a, _ in a }
        return .problem(code, detail: detail, extra: object.merging([Acknowledgement.record: record]) { a, _ in a }, headers: headers)
    }

}
