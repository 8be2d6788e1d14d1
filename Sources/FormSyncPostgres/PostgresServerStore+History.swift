import FormSyncProtocol
import FormSyncServer
import Foundation

/// The history of documents and records on PostgreSQL (`HistoryStore`). A document's event is
/// written without a feed position; the feed's sequencer numbers committed events after their
/// commit, in the order they were written, so that the submissions feed is in commit order on
/// every node (see `PostgresServerStore+Records`).
extension PostgresServerStore: HistoryStore {
    package var history: any HistoryStore { self }

    package func addDocumentEvent(_ event: StoredDocumentEvent) throws -> Int64 {
        let rows = try query(Self.insertEvent + " RETURNING id", Self.eventValues(event))
        pool.currentScope?.changesWritten = true
        return rows.int(0, 0) ?? 0
    }

    package func noteDocumentEvent(_ event: StoredDocumentEvent) throws {
        guard let scope = pool.currentScope, scope.transactionOpen else {
            _ = try addDocumentEvent(event)
            return
        }
        try pool.with { $0.later(Self.insertEvent, Self.eventValues(event)) }
        scope.changesWritten = true
    }

    private static let insertEvent = """
        INSERT INTO document_events (workspace, document_id, entity_id, form, form_version, event, version, payload, principal,
            device_id, at, captured_at, via, source_document, verdict, comment, issues, owner)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
        """

    private static func eventValues(_ event: StoredDocumentEvent) -> [PostgresValue] {
        let author = event.author
        return [
            .text(event.workspace), .text(event.documentID), .integer(event.entityID), .text(event.form),
            .integer(Int64(event.formVersion)), .text(event.event.rawValue), .integer(Int64(event.version)),
            event.payload.map(PostgresValue.bytes) ?? .null, Self.text(author.principal), Self.text(author.device),
            .integer(author.at), author.capturedAt.map(PostgresValue.integer) ?? .null, .text(author.via.rawValue),
            Self.text(author.documentID), Self.text(event.review?.verdict.rawValue), Self.text(event.review?.comment),
            event.review.map { .text(String(decoding: $0.issuesJSON, as: UTF8.self)) } ?? .null, Self.text(event.owner),
        ]
    }

    private static func text(_ value: String?) -> PostgresValue { value.map(PostgresValue.text) ?? .null }

    private static let eventColumns = """
        id, seq, workspace, document_id, entity_id, form, form_version, event, version, payload, principal, device_id, at, captured_at,
        via, source_document, verdict, comment, issues, owner
        """

    private static func events(_ rows: PostgresRows) -> [StoredDocumentEvent] {
        (0..<rows.count).map { row in
            let verdict = rows.text(row, 16).flatMap(Review.Verdict.init(rawValue:))
            return StoredDocumentEvent(
                id: rows.int(row, 0) ?? 0, seq: rows.int(row, 1) ?? 0, workspace: rows.text(row, 2) ?? "",
                documentID: rows.text(row, 3) ?? "", entityID: rows.int(row, 4) ?? 0, form: rows.text(row, 5) ?? "",
                formVersion: Int(rows.int(row, 6) ?? 0), event: HistoryEvent(rawValue: rows.text(row, 7) ?? "") ?? .edited,
                version: Int(rows.int(row, 8) ?? 0), payload: rows.bytes(row, 9),
                author: Authorship(
                    principal: rows.text(row, 10), device: rows.text(row, 11), at: rows.int(row, 12) ?? 0, capturedAt: rows.int(row, 13),
                    via: ChangeAuthor.Via(rawValue: rows.text(row, 14) ?? "") ?? .submission, documentID: rows.text(row, 15)),
                review: verdict.map {
                    StoredReview(
                        verdict: $0, comment: rows.text(row, 17) ?? "",
                        issues: StoredReview.issues(from: rows.text(row, 18).map { Data($0.utf8) }))
                },
                owner: rows.text(row, 19))
        }
    }

    package func documentEvents(document documentID: String, limit: Int) throws -> [StoredDocumentEvent] {
        Self.events(
            try query(
                "SELECT \(Self.eventColumns) FROM document_events WHERE document_id = $1 ORDER BY id DESC LIMIT $2",
                [.text(documentID), .integer(Int64(limit))])
        ).reversed()
    }

    package func documentEvent(id: Int64) throws -> StoredDocumentEvent? {
        Self.events(try query("SELECT \(Self.eventColumns) FROM document_events WHERE id = $1", [.integer(id)])).first
    }

    package func latestVersionEvent(document documentID: String) throws -> StoredDocumentEvent? {
        Self.events(
            try query(
                "SELECT \(Self.eventColumns) FROM document_events WHERE document_id = $1 AND verdict IS NULL ORDER BY id DESC LIMIT 1",
                [.text(documentID)])
        ).first
    }

    /// Numbers what committed without a position first (the sequencer's pass has not run yet,
    /// or its node died before it did).
    private func sequenceWaitingEvents() throws {
        if try query("SELECT EXISTS (SELECT 1 FROM document_events WHERE seq IS NULL)").int(0, 0) == 1 { try sequenceChanges() }
    }

    package func submissionEvents(
        workspace: String, after cursor: Int64, form: String?, since: Int64?, until: Int64?, limit: Int
    ) throws
        -> [StoredDocumentEvent]
    {
        try sequenceWaitingEvents()
        var conditions = ["seq IS NOT NULL", "workspace = $1", "seq > $2"]
        var values: [PostgresValue] = [.text(workspace), .integer(cursor)]
        if let form {
            values.append(.text(form))
            conditions.append("form = $\(values.count)")
        }
        if let since {
            values.append(.integer(since))
            conditions.append("at >= $\(values.count)")
        }
        if let until {
            values.append(.integer(until))
            conditions.append("at < $\(values.count)")
        }
        values.append(.integer(Int64(limit)))
        return Self.events(
            try query(
                "SELECT \(Self.eventColumns) FROM document_events WHERE \(conditions.joined(separator: " AND ")) ORDER BY seq LIMIT $\(values.count)",
                values))
    }

    package func reviews(workspace: String, principal: String, after cursor: Int64, limit: Int) throws -> [StoredDocumentEvent] {
        try sequenceWaitingEvents()
        return Self.events(
            try query(
                """
                SELECT \(Self.eventColumns) FROM document_events
                WHERE workspace = $1 AND owner = $2 AND verdict IS NOT NULL AND seq IS NOT NULL AND seq > $3 ORDER BY seq LIMIT $4
                """, [.text(workspace), .text(principal), .integer(cursor), .integer(Int64(limit))]))
    }

    package func recentEvents(workspace: String, form: String?, limit: Int) throws -> [StoredDocumentEvent] {
        guard let form else {
            return Self.events(
                try query(
                    "SELECT \(Self.eventColumns) FROM document_events WHERE workspace = $1 ORDER BY id DESC LIMIT $2",
                    [.text(workspace), .integer(Int64(limit))]))
        }
        return Self.events(
            try query(
                "SELECT \(Self.eventColumns) FROM document_events WHERE workspace = $1 AND form = $2 ORDER BY id DESC LIMIT $3",
                [.text(workspace), .text(form), .integer(Int64(limit))]))
    }

    package func lastSubmissionEvent() throws -> Int64 {
        try sequenceWaitingEvents()
        return try query("SELECT COALESCE(MAX(seq), 0) FROM document_events").int(0, 0) ?? 0
    }

    package func addRecordVersion(_ version: StoredRecordVersion) throws {
        let author = version.author
        try query(
            """
            INSERT INTO record_versions (workspace, type, id, version, event, payload, principal, device_id, at, captured_at, via, source_document)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            """,
            [
                .text(version.workspace), .text(version.type), .integer(version.id), .integer(Int64(version.version)),
                .text(version.event.rawValue), version.payload.map(PostgresValue.bytes) ?? .null, Self.text(author.principal),
                Self.text(author.device), .integer(author.at), author.capturedAt.map(PostgresValue.integer) ?? .null,
                .text(author.via.rawValue), Self.text(author.documentID),
            ])
    }

    package func recordVersions(workspace: String, type: String, id: Int64, limit: Int) throws -> [StoredRecordVersion] {
        let rows = try query(
            """
            SELECT workspace, type, id, version, event, payload, principal, device_id, at, captured_at, via, source_document
            FROM record_versions WHERE workspace = $1 AND type = $2 AND id = $3 ORDER BY n DESC LIMIT $4
            """, [.text(workspace), .text(type), .integer(id), .integer(Int64(limit))])
        return (0..<rows.count).map { row in
            StoredRecordVersion(
                workspace: rows.text(row, 0) ?? "", type: rows.text(row, 1) ?? "", id: rows.int(row, 2) ?? 0,
                version: Int(rows.int(row, 3) ?? 0), event: HistoryEvent(rawValue: rows.text(row, 4) ?? "") ?? .edited,
                payload: rows.bytes(row, 5),
                author: Authorship(
                    principal: rows.text(row, 6), device: rows.text(row, 7), at: rows.int(row, 8) ?? 0, capturedAt: rows.int(row, 9),
                    via: ChangeAuthor.Via(rawValue: rows.text(row, 10) ?? "") ?? .backOffice, documentID: rows.text(row, 11)))
        }.reversed()
    }
}
