import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

/// The records a submission's lists create (`creates:` on a form's list, docs/PROTOCOL.md
/// "Several records from one submission"): one per item, checked against the record's type
/// before anything is written, created with the document in its transaction under ids of their
/// own, and kept by list and position so that a repeat of the submission is answered with the
/// same records.
struct ListRecordService: ServerPart {
    let context: ServerContext

    /// One record an item will create, checked.
    struct Prepared {
        var list: String
        var position: Int
        var type: String
        var payload: Data
        var scope: String
    }

    enum Preparation {
        case ready([Prepared])
        case refused(HTTPResponse)
    }

    /// The records `payload`'s lists would create, each checked against its record type; the
    /// refusal names the item (`/findings/2/title`) when one breaks its record's rules.
    func prepare(_ entry: FormRegistry.Entry, payload: Data) throws -> Preparation {
        var prepared: [Prepared] = []
        for action in entry.listRecordActions {
            let items = try RecordProjection.listRecords(form: payload, action: action)
            for (position, fields) in items.enumerated() {
                switch records.prepareRecord(action.recordType, payload: fields) {
                case .success(let record):
                    prepared.append(
                        Prepared(
                            list: action.list, position: position, type: action.recordType, payload: record.payload, scope: record.scope))
                case .failure(let refusal):
                    guard case .invalid(let errors) = refusal.error else { return .refused(refusal.response) }
                    let item = Self.itemPointer(list: action.list, position: position)
                    return .refused(
                        .problem(
                            .invalidRecord,
                            detail:
                                "item \(position + 1) of '\(action.list)' would make a \(action.recordType) that breaks \(errors.count) rule(s)",
                            errors: errors.map { error in
                                // A field the record took from the form is the form's; the rest are the item's.
                                let field = error.pointer.dropFirst(2).split(separator: "/").first.map(String.init) ?? ""
                                let pointer = action.formFields.contains(field) ? error.pointer : item + error.pointer.dropFirst()
                                return ["pointer": pointer, "code": error.code, "detail": error.detail]
                            }))
                }
            }
        }
        return .ready(prepared)
    }

    /// Creates the prepared records under new ids, by `author`, and keeps them as `document`'s;
    /// the reply's `created_records`. Runs in the document's transaction.
    func create(_ prepared: [Prepared], document documentID: String, workspace: String, by author: Authorship) throws -> [[String: Any]] {
        var created: [CreatedRecord] = []
        var replies: [[String: Any]] = []
        for record in prepared {
            let id = try store.nextEntityID()
            let version = try versions.putRecord(
                workspace: workspace, type: record.type, id: id, scope: record.scope, payload: record.payload,
                files: files.fileIDs(ofRecord: record.type, record.payload), by: author)
            created.append(CreatedRecord(list: record.list, position: record.position, type: record.type, id: id))
            replies.append(
                Self.reply(
                    list: record.list, position: record.position, type: record.type, id: id, version: version, payload: record.payload))
        }
        if !created.isEmpty { try store.noteCreatedRecords(document: documentID, created) }
        return replies
    }

    /// What `document`'s lists created, as the reply's `created_records` (each record as the
    /// server holds it now; one since deleted is named without its fields).
    func replies(_ entry: FormRegistry.Entry, document documentID: String, workspace: String) throws -> [[String: Any]] {
        let order = Dictionary(entry.listRecordActions.enumerated().map { ($1.list, $0) }, uniquingKeysWith: { a, _ in a })
        let held = try store.createdRecords(document: documentID).sorted {
            (order[$0.list] ?? Int.max, $0.position) < (order[$1.list] ?? Int.max, $1.position)
        }
        return try held.map { created in
            guard let record = try store.record(workspace: workspace, type: created.type, id: created.id) else {
                return [
                    Acknowledgement.list: created.list, Acknowledgement.position: created.position, "type": created.type, "id": created.id,
                    "deleted": true,
                ]
            }
            return Self.reply(
                list: created.list, position: created.position, type: created.type, id: created.id, version: record.version,
                payload: record.payload)
        }
    }

    /// The record a pending file's pointer sits in: an item of a list that created records is
    /// its own record; any other pointer is the form's (`formRecord`).
    func record(
        ofPointer pointer: String, created: [CreatedRecord], formRecord: (type: String, id: Int64)?
    ) -> (type: String, id: Int64)? {
        for record in created where pointer.hasPrefix(Self.itemPointer(list: record.list, position: record.position) + "/") {
            return (record.type, record.id)
        }
        return formRecord
    }

    /// The pointer of a list's item as field errors and files write them (`#/findings/2`; a
    /// list's name is a spec field name: nothing to escape).
    static func itemPointer(list: String, position: Int) -> String { "#/\(list)/\(position)" }

    static func reply(list: String, position: Int, type: String, id: Int64, version: Int, payload: Data) -> [String: Any] {
        RecordService.entityObject(type: type, id: id, version: version, payload: payload).merging([
            Acknowledgement.list: list, Acknowledgement.position: position,
        ]) { a, _ in a }
    }
}
