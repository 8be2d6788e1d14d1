import FormSyncProtocol
import FormSyncSQLite
import Foundation

/// The history of documents and records in the embedded store (`HistoryStore`). One process
/// writes under the store's lock, so an event's id is its commit order and is its feed position.
final class SQLiteHistory: HistoryStore, @unchecked Sendable {
    private let db: SQLiteConnection

    init(db: SQLiteConnection) {
        self.db = db
    }

    private static let insertEvent = SQLiteConnection.Statement(
        """
        INSERT INTO document_events (workspace, document_id, entity_id, form, form_version, event, version, payload, principal,
            device_id, at, captured_at, via, source_document, verdict, comment, issues, owner)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """)

    func addDocumentEvent(_ event: StoredDocumentEvent) throws -> Int64 {
        let author = event.author
        try db.run(
            Self.insertEvent,
            [
                .text(event.workspace), .text(event.documentID), .integer(event.entityID), .text(event.form),
                .integer(Int64(event.formVersion)), .text(event.event.rawValue), .integer(Int64(event.version)),
                event.payload.map(SQLValue.blob) ?? .null, Self.text(author.principal), Self.text(author.device), .integer(author.at),
                author.capturedAt.map(SQLValue.integer) ?? .null, .text(author.via.rawValue), Self.text(author.documentID),
                Self.text(event.review?.verdict.rawValue), Self.text(event.review?.comment),
                event.review.map { .text(String(decoding: $0.issuesJSON, as: UTF8.self)) } ?? .null, Self.text(event.owner),
            ])
        return db.lastInsertRowID
    }

    private static func text(_ value: String?) -> SQLValue { value.map(SQLValue.text) ?? .null }

    private static let eventColumns = """
        id, workspace, document_id, entity_id, form, form_version, event, version, payload, principal, device_id, at, captured_at,
        via, source_document, verdict, comment, issues, owner
        """

    private static func event(_ row: SQLiteConnection.Row) -> StoredDocumentEvent {
        let verdict = row.text(15).flatMap(Review.Verdict.init(rawValue:))
        return StoredDocumentEvent(
            id: row.int(0), seq: row.int(0), workspace: row.text(1) ?? "", documentID: row.text(2) ?? "", entityID: row.int(3),
            form: row.text(4) ?? "", formVersion: Int(row.int(5)), event: HistoryEvent(rawValue: row.text(6) ?? "") ?? .edited,
            version: Int(row.int(7)), payload: row.blob(8),
            author: Authorship(
                principal: row.text(9), device: row.text(10), at: row.int(11), capturedAt: row.optionalInt(12),
                via: ChangeAuthor.Via(rawValue: row.text(13) ?? "") ?? .submission, documentID: row.text(14)),
            review: verdict.map {
                StoredReview(
                    verdict: $0, comment: row.text(16) ?? "", issues: StoredReview.issues(from: row.text(17).map { Data($0.utf8) }))
            },
            owner: row.text(18))
    }

    func documentEvents(document documentID: String, limit: Int) throws -> [StoredDocumentEvent] {
        try db.query(
            "SELECT \(Self.eventColumns) FROM document_events WHERE document_id = ? ORDER BY id DESC LIMIT ?",
            [.text(documentID), .integer(Int64(limit))], Self.event
        ).reversed()
    }

    func documentEvent(id: Int64) throws -> StoredDocumentEvent? {
        try db.query("SELECT \(Self.eventColumns) FROM document_events WHERE id = ?", [.integer(id)], Self.event).first
    }

    func latestVersionEvent(document documentID: String) throws -> StoredDocumentEvent? {
        try db.query(
            "SELECT \(Self.eventColumns) FROM document_events WHERE document_id = ? AND verdict IS NULL ORDER BY id DESC LIMIT 1",
            [.text(documentID)], Self.event
        ).first
    }

    func submissionEvents(
        workspace: String, after cursor: Int64, form: String?, since: Int64?, until: Int64?, limit: Int
    ) throws
        -> [StoredDocumentEvent]
    {
        var conditions = ["workspace = ?", "id > ?"]
        var values: [SQLValue] = [.text(workspace), .integer(cursor)]
        if let form {
            conditions.append("form = ?")
            values.append(.text(form))
        }
        if let since {
            conditions.append("at >= ?")
            values.append(.integer(since))
        }
        if let until {
            conditions.append("at < ?")
            values.append(.integer(until))
        }
        values.append(.integer(Int64(limit)))
        return try db.query(
            "SELECT \(Self.eventColumns) FROM document_events WHERE \(conditions.joined(separator: " AND ")) ORDER BY id LIMIT ?", values,
            Self.event)
    }

    func reviews(workspace: String, principal: String, after cursor: Int64, limit: Int) throws -> [StoredDocumentEvent] {
        try db.query(
            """
            SELECT \(Self.eventColumns) FROM document_events
            WHERE workspace = ? AND owner = ? AND verdict IS NOT NULL AND id > ? ORDER BY id LIMIT ?
            """, [.text(workspace), .text(principal), .integer(cursor), .integer(Int64(limit))], Self.event)
    }

    func recentEvents(workspace: String, form: String?, limit: Int) throws -> [StoredDocumentEvent] {
        guard let form else {
            return try db.query(
                "SELECT \(Self.eventColumns) FROM document_events WHERE workspace = ? ORDER BY id DESC LIMIT ?",
                [.text(workspace), .integer(Int64(limit))], Self.event)
        }
        return try db.query(
            "SELECT \(Self.eventColumns) FROM document_events WHERE workspace = ? AND form = ? ORDER BY id DESC LIMIT ?",
            [.text(workspace), .text(form), .integer(Int64(limit))], Self.event)
    }

    func lastSubmissionEvent() throws -> Int64 {
        try db.query("SELECT COALESCE(MAX(id), 0) FROM document_events", [], { $0.int(0) }).first ?? 0
    }

    private static let insertVersion = SQLiteConnection.Statement(
        """
        INSERT INTO record_versions (workspace, type, id, version, event, payload, principal, device_id, at, captured_at, via, source_document)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """)

    func addRecordVersion(_ version: StoredRecordVersion) throws {
        let author = version.author
        try db.run(
            Self.insertVersion,
            [
                .text(version.workspace), .text(version.type), .integer(version.id), .integer(Int64(version.version)),
                .text(version.event.rawValue), version.payload.map(SQLValue.blob) ?? .null, Self.text(author.principal),
                Self.text(author.device), .integer(author.at), author.capturedAt.map(SQLValue.integer) ?? .null, .text(author.via.rawValue),
                Self.text(author.documentID),
            ])
    }

    func recordVersions(workspace: String, type: String, id: Int64, limit: Int) throws -> [StoredRecordVersion] {
        try db.query(
            """
            SELECT workspace, type, id, version, event, payload, principal, device_id, at, captured_at, via, source_document
            FROM record_versions WHERE workspace = ? AND type = ? AND id = ? ORDER BY n DESC LIMIT ?
            """, [.text(workspace), .text(type), .integer(id), .integer(Int64(limit))]
        ) { row in
            StoredRecordVersion(
                workspace: row.text(0) ?? "", type: row.text(1) ?? "", id: row.int(2), version: Int(row.int(3)),
                event: HistoryEvent(rawValue: row.text(4) ?? "") ?? .edited, payload: row.blob(5),
                author: Authorship(
                    principal: row.text(6), device: row.text(7), at: row.int(8), capturedAt: row.optionalInt(9),
                    via: ChangeAuthor.Via(rawValue: row.text(10) ?? "") ?? .backOffice, documentID: row.text(11)))
        }.reversed()
    }
}
