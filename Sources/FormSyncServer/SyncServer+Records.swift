import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

/// Records on the reference server: the back office's API (seed, change and delete records
/// while devices are offline), the change feed (`GET /changes`), one record
/// (`GET /records/{type}/{id}`), and applying the submissions of forms that create or edit a
/// record. docs/PROTOCOL.md, "Records and the change feed".
extension SyncServer {
    /// A record as the server holds it.
    public struct Record: Sendable, Equatable {
        public var type: String
        public var id: Int64
        public var version: Int
        /// The value of its scope field ("" for a record every device receives).
        public var scope: String
        /// Its fields' JSON.
        public var fields: Data
    }

    /// Why the back office's write was refused.
    public enum RecordError: Error, Equatable, CustomStringConvertible {
        /// The fields break the record type's rules.
        case invalid([FieldError])
        /// The fields are not a JSON object of the record type.
        case malformed(String)

        public var description: String {
            switch self {
            case .invalid(let errors):
                return "the record breaks \(errors.count) rule(s): " + errors.map { "\($0.pointer) \($0.detail)" }.joined(separator: "; ")
            case .malformed(let reason): return reason
            }
        }
    }

    // MARK: The back office

    /// Creates (`id` nil: a new id from the server's sequence) or replaces a record, as the back
    /// office does, and puts the change in the feed. Returns the record as stored.
    @discardableResult
    public func putRecord(_ type: String, id: Int64? = nil, fields: Data, workspace: String) throws -> Record {
        try locked { try store.transaction { try seedRecord(RecordSeed(type: type, id: id, fields: fields, workspace: workspace)) } }
    }

    /// One record for `putRecords`.
    public struct RecordSeed: Sendable {
        public var type: String
        public var id: Int64?
        public var fields: Data
        public var workspace: String

        public init(type: String, id: Int64? = nil, fields: Data, workspace: String) {
            self.type = type
            self.id = id
            self.fields = fields
            self.workspace = workspace
        }
    }

    /// Writes several records in one transaction: all of them, or (when one is refused, which
    /// the error names by its index) none.
    public func putRecords(_ seeds: [RecordSeed]) throws {
        try locked {
            try store.transaction {
                for (index, seed) in seeds.enumerated() {
                    do {
                        _ = try seedRecord(seed)
                    } catch let error as RecordError {
                        throw RecordSeedError(index: index, type: seed.type, error: error)
                    }
                }
            }
        }
    }

    /// The back office's write of one record (under the lock, in a transaction). Refused: a
    /// workspace no token could name, a type the server has no record spec for (a device could
    /// not store it, and would stop at it on every pull), fields that break the type's rules, an
    /// id outside 1 to 2^53 − 1, and an id that another type or a document already holds (ids
    /// are unique across the server).
    private func seedRecord(_ seed: RecordSeed) throws -> Record {
        guard Self.isIdentifier(seed.workspace) else {
            throw RecordError.malformed(
                "a record's workspace is 1 to 128 characters from A-Z a-z 0-9 - . _ ~ : (not \"\(seed.workspace.prefix(40))\")")
        }
        guard recordTypes[seed.type] != nil else {
            throw RecordError.malformed(
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
            guard given >= 1 && given <= Self.maxEntityID else {
                throw RecordError.malformed("a record id is a whole number from 1 to 2^53 - 1")
            }
            if let holder = try store.holder(ofID: given), holder != seed.type {
                throw RecordError.malformed(
                    "id \(given) already belongs to \(holder == "" ? "a document" : "a \(holder) record"); ids are unique across the server"
                )
            }
            id = given
        } else {
            id = try store.nextEntityID()
        }
        let version = try store.putRecord(
            workspace: seed.workspace, type: seed.type, id: id, scope: prepared.scope, payload: prepared.payload,
            files: fileIDs(ofRecord: seed.type, prepared.payload), at: now())
        return Record(type: seed.type, id: id, version: version, scope: prepared.scope, fields: prepared.payload)
    }

    /// The largest id of a document or a record: 2^53 − 1, the largest integer every JSON reader
    /// holds exactly.
    package static let maxEntityID: Int64 = 9_007_199_254_740_991

    /// Which record of a `putRecords` batch was refused, and why; nothing of the batch was written.
    public struct RecordSeedError: Error, CustomStringConvertible {
        public var index: Int
        public var type: String
        public var error: RecordError

        public var description: String { "record \(index) (\(type.prefix(140))): \(error)" }
    }

    /// Writes a typed record (a new one when its id is 0).
    @discardableResult
    public func putRecord<R: SyncRecord>(_ record: R, workspace: String) throws -> R {
        let stored = try putRecord(
            R.recordType, id: record.id > 0 ? record.id : nil, fields: try FormRegistry.encode(record), workspace: workspace)
        return try RecordProjection.decode(R.self, fields: stored.fields, id: stored.id, version: stored.version)
    }

    /// Deletes a record; devices that hold it receive the deletion. False when there was none.
    @discardableResult
    public func deleteRecord(_ type: String, id: Int64, workspace: String) throws -> Bool {
        try locked { try store.transaction { try store.deleteRecord(workspace: workspace, type: type, id: id) } }
    }

    /// One record, if the server holds it.
    public func record(_ type: String, id: Int64, workspace: String) -> Record? {
        locked { (try? store.record(workspace: workspace, type: type, id: id)).flatMap { $0 }.map(Self.publicRecord) }
    }

    /// Every record of a workspace, by type and id.
    public func records(workspace: String) -> [Record] {
        locked { ((try? store.records(workspace: workspace)) ?? []).map(Self.publicRecord) }
    }

    static func publicRecord(_ stored: StoredRecord) -> Record {
        Record(type: stored.type, id: stored.id, version: stored.version, scope: stored.scope, fields: stored.payload)
    }

    /// A refused record write: the reply for a device, the error for the back office.
    struct Refusal: Error {
        var response: HTTPResponse
        var error: RecordError
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

    // MARK: Edits

    /// Applies an edit form's submission to the record its key names, under `If-Match`. Runs
    /// inside the ledger's transaction.
    func submitEdit(
        _ request: HTTPRequest, entry: FormRegistry.Entry, action: RecordAction, payload: Data, caller: Caller,
        ifMatch: (any: Bool, strong: [String])?
    ) throws -> HTTPResponse {
        let workspace = caller.workspace
        let documentID = request.header("formsync-document")!
        guard let id = RecordProjection.editedID(form: payload, action: action), id > 0 else {
            return .problem(
                .invalidPayload, detail: "an edit names the record it changes in \(action.keyField ?? "its key")",
                errors: [["pointer": "#/\(action.keyField ?? "")", "code": "required", "detail": "the record's id is required"]])
        }
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
            if stored == payload { return try editReply(200, documentID: documentID, entry: entry, action: action, record: current) }
            return try editReply(
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
        guard ifMatch.any || ifMatch.strong.contains(Self.etag(current.version)) else {
            return try editReply(412, documentID: documentID, entry: entry, action: action, record: current, code: .staleVersion)
        }
        // The server's own value stands for every field it is the authority of; an edit that
        // tried to change one is a conflict for a person, not a silent overwrite.
        let serverView = try RecordProjection.editPayload(record: current.payload, id: id, action: action)
        let merged = try entry.merge(serverView, payload, serverView)
        if !merged.conflicts.isEmpty {
            return try editReply(
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
        let version = try store.putRecord(
            workspace: workspace, type: action.recordType, id: id, scope: updated.scope, payload: updated.payload,
            files: fileIDs(ofRecord: action.recordType, updated.payload), at: now())
        _ = try store.createDocument(
            documentID, form: entry.name, formVersion: entry.version, workspace: workspace, principal: caller.principal,
            payload: merged.merged, at: now())
        let record = StoredRecord(type: action.recordType, id: id, version: version, scope: updated.scope, payload: updated.payload)
        return try editReply(200, documentID: documentID, entry: entry, action: action, record: record)
    }

    /// A reply about an edited record: the record as the form sees it (`record`), its version
    /// as the ETag, and the whole record (`entity`) for the device's store.
    func editReply(
        _ status: Int, documentID: String, entry: FormRegistry.Entry, action: RecordAction, record: StoredRecord,
        code: ProblemCode? = nil, detail: String? = nil
    ) throws -> HTTPResponse {
        let view = try RecordProjection.editPayload(record: record.payload, id: record.id, action: action)
        let object: [String: Any] = [
            Acknowledgement.documentID: documentID, Acknowledgement.id: record.id, Acknowledgement.form: entry.name,
            Acknowledgement.formVersion: entry.version,
            Acknowledgement.version: Self.etag(record.version),
            Acknowledgement.record: (try? JSONSerialization.jsonObject(with: view)) ?? [:],
            Acknowledgement.entity: Self.entityObject(type: record.type, id: record.id, version: record.version, payload: record.payload),
        ]
        let headers = [("ETag", Self.etag(record.version))]
        guard let code else { return .json(status, object, headers: headers) }
        return .problem(code, detail: detail, extra: object, headers: headers)
    }

    // MARK: Reading

    /// The most changes one page of the feed returns.
    public static let maxChangesPerPage = 1000

    /// `GET /changes?cursor=…&limit=…`: the changes in the principal's scope after the cursor.
    func changes(_ request: HTTPRequest) -> HTTPResponse {
        let caller: Caller
        switch self.caller(of: request) {
        case .allowed(let found): caller = found
        case .refused(let refusal): return refusal
        }
        var parameters: [String: String] = [:]
        for pair in (request.query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, parameters[parts[0]] == nil, let value = parts[1].removingPercentEncoding else {
                return .problem(.badQuery, detail: "the query takes cursor= and limit= once each")
            }
            parameters[parts[0]] = value
        }
        var limit = 500
        if let text = parameters["limit"] {
            // Digits only; a number past Int's range is as far above 1,000 as any other.
            guard !text.isEmpty, text.utf8.allSatisfy({ (48...57).contains($0) }), (Int(text) ?? Int.max) >= 1 else {
                return .problem(
                    .badLimit,
                    detail: "limit is a whole number from 1 (above \(Self.maxChangesPerPage) it is served as \(Self.maxChangesPerPage))")
            }
            let value = Int(text) ?? Int.max
            limit = min(value, Self.maxChangesPerPage)
        }
        var after: Int64 = 0
        if let cursor = parameters["cursor"], !cursor.isEmpty {
            guard let seq = Self.parseCursor(cursor) else {
                return .problem(.badCursor, detail: "the cursor is not one this server issued")
            }
            after = seq
        }
        let response = locked { page(workspace: caller.workspace, principal: caller.feedPrincipal, after: after, limit: limit) }
        let (hook, pages) = stateLocked { () -> ((@Sendable (Int) -> Void)?, Int) in
            feedPages += 1
            return (feedHook, feedPages)
        }
        hook?(pages)
        return response
    }

    /// One page of the feed; runs under the lock.
    private func page(workspace: String, principal: String?, after: Int64, limit: Int) -> HTTPResponse {
        do {
            guard after <= (try store.lastChange()) else {
                return .problem(
                    .cursorExpired, detail: "the cursor is ahead of this server's feed (its data was reset); pull again from the start")
            }
            let page = try store.feed(workspace: workspace, principal: principal, after: after, limit: limit + 1)
            let more = page.count > limit
            let entries = page.prefix(limit)
            // Written by hand around the stored bytes: records are stored as canonical JSON, so a
            // page costs no parsing and no re-encoding of them.
            var body = Data(#"{"changes":["#.utf8)
            for (offset, entry) in entries.enumerated() {
                if offset > 0 { body.append(0x2C) }
                body.append(contentsOf: #"{"id":\#(entry.id),"type":"#.utf8)
                body.append(Self.jsonString(entry.type))
                if !entry.deleted, let payload = entry.payload {
                    body.append(contentsOf: #","version":\#(entry.version),"record":"#.utf8)
                    body.append(payload)
                    body.append(0x7D)
                } else {
                    body.append(contentsOf: #","deleted":true}"#.utf8)
                }
            }
            body.append(contentsOf: #"],"cursor":"#.utf8)
            body.append(Self.jsonString(Self.cursor(entries.last?.seq ?? after)))
            body.append(contentsOf: #","more":\#(more)}"#.utf8)
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: body)
        } catch {
            return failure(error, "feed error")
        }
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
                headers: [("ETag", Self.etag(record.version))])
        }
    }

    static func jsonString(_ text: String) -> Data {
        Data(jsonString(text).utf8)
    }

    /// Cursors are opaque to devices: `c1.` and a sequence number.
    static func cursor(_ seq: Int64) -> String { "c1.\(seq)" }

    static func parseCursor(_ text: String) -> Int64? {
        guard text.hasPrefix("c1."), text.utf8.count <= 24 else { return nil }
        let digits = text.dropFirst(3)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (48...57).contains($0) }), let value = Int64(digits) else { return nil }
        return value
    }
}
