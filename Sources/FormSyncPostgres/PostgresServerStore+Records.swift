import FormSyncModel
import FormSyncServer
import Foundation

/// Records and the change feed on PostgreSQL, in commit order across nodes.
///
/// A sequence number taken when a change is written is not commit order: a transaction that
/// took 41 can commit after one that took 42 was read, and a device whose cursor is at 42 would
/// skip 41 for ever. So a change is written without a number (`seq` NULL, invisible to the
/// feed), and numbers are given to committed changes only, by a sequencer that runs alone
/// (an advisory lock held until its transaction commits): every number it gives is larger than
/// any number a reader could have seen. A writer asks its node's `PostgresSequencer` for a pass
/// after its commit and replies without waiting (writes committing meanwhile share one pass);
/// a feed read runs it first when changes are waiting, so a device that pulls right after its
/// write sees it (and so do the changes of a node that died between its commit and a pass).
extension PostgresServerStore {
    /// The channel the sequencer notifies with the workspace of what it numbered.
    static let changeChannel = "formsync_changes"

    /// The sequencer's advisory lock ("FSCHANGE").
    static let sequencerLock: Int64 = 0x4653_4348_414E_4745

    /// Numbers the committed changes and documents' events that have none, in one transaction of
    /// its own.
    func sequenceChanges() throws {
        try pool.scope {
            try pool.with { connection in
                try connection.run("BEGIN")
                do {
                    try connection.query("SELECT pg_advisory_xact_lock($1)", [.integer(Self.sequencerLock)])
                    let changed = try connection.query(
                        """
                        UPDATE changes SET seq = nextval('change_seq')
                        WHERE (workspace, type, id, scope) IN (
                            SELECT workspace, type, id, scope FROM changes WHERE seq IS NULL ORDER BY id FOR UPDATE)
                        RETURNING workspace
                        """)
                    var workspaces = Set((0..<changed.count).compactMap { changed.text($0, 0) })
                    // Documents' events take the next positions in the order they were written:
                    // two events of one document were written one after the other (the document's
                    // row is locked meanwhile), so the feed never shows version 2 before version 1.
                    let events = try connection.query(
                        """
                        UPDATE document_events e SET seq = m.top + w.rank
                        FROM (SELECT id, row_number() OVER (ORDER BY id) AS rank FROM document_events WHERE seq IS NULL) w,
                            (SELECT COALESCE(MAX(seq), 0) AS top FROM document_events) m
                        WHERE e.id = w.id
                        RETURNING e.workspace
                        """)
                    workspaces.formUnion((0..<events.count).compactMap { events.text($0, 0) })
                    // Every node's long-polls hear of it once it commits (LISTEN/NOTIFY).
                    for workspace in workspaces.sorted() {
                        try connection.query("SELECT pg_notify($1, $2)", [.text(Self.changeChannel), .text(workspace)])
                    }
                    try connection.run("COMMIT")
                } catch {
                    try? connection.run("ROLLBACK")
                    throw error
                }
            }
        }
    }

    package func nextEntityID() throws -> Int64 {
        // One connection for the claim and the look that follows it.
        try pool.scope { try claimNextEntityID() }
    }

    private func claimNextEntityID() throws -> Int64 {
        while true {
            // The next number, claimed until the transaction ends; then (in a statement of its
            // own, which sees what committed before the claim, sent in the same round trip)
            // what holds it.
            let rows: PostgresRows
            do {
                try pool.with { $0.later("SELECT pg_advisory_xact_lock(nextval('entity_ids'))") }
                rows = try query(
                    """
                    SELECT (SELECT type FROM records WHERE id = s.id LIMIT 1), EXISTS (SELECT 1 FROM documents WHERE id = s.id), s.id
                    FROM (SELECT currval('entity_ids') AS id) s
                    """)
            } catch let error as PostgresError where error.sqlState == "2200H" {
                throw IDsExhausted()
            }
            guard let candidate = rows.int(0, 2), candidate >= 1, candidate <= SyncServer.maxEntityID else { throw IDsExhausted() }
            // Ids the back office chose itself are stepped over.
            if Self.holder(rows) == nil { return candidate }
        }
    }

    /// No ids are left below 2^53.
    struct IDsExhausted: Error, CustomStringConvertible {
        var description: String { "no ids are left below 2^53" }
    }

    package func holder(ofID id: Int64) throws -> String? {
        // Inside a transaction the id is claimed until it ends, so that a back-office seed
        // naming an id and a create taking it from the sequence never both have it.
        if pool.currentScope?.transactionOpen == true {
            try query("SELECT pg_advisory_xact_lock($1)", [.integer(id)])
        }
        return try heldBy(id)
    }

    /// What holds `id`, as the statement's snapshot sees it.
    private func heldBy(_ id: Int64) throws -> String? {
        Self.holder(
            try query(
                "SELECT (SELECT type FROM records WHERE id = $1 LIMIT 1), EXISTS (SELECT 1 FROM documents WHERE id = $1)", [.integer(id)]))
    }

    /// A record's type, "" for a document, or nil, from a row of (its record's type, whether a document has it).
    private static func holder(_ rows: PostgresRows) -> String? {
        if let type = rows.text(0, 0) { return type }
        return rows.int(0, 1) == 1 ? "" : nil
    }

    private static func record(_ rows: PostgresRows, _ row: Int) -> StoredRecord {
        StoredRecord(
            type: rows.text(row, 0) ?? "", id: rows.int(row, 1) ?? 0, version: Int(rows.int(row, 2) ?? 0), scope: rows.text(row, 3) ?? "",
            payload: rows.bytes(row, 4) ?? Data())
    }

    package func noteCreatedRecords(document documentID: String, _ records: [CreatedRecord]) throws {
        for record in records {
            try query(
                "INSERT INTO document_records (document_id, list, position, type, record_id) VALUES ($1, $2, $3::bigint, $4, $5::bigint)",
                [.text(documentID), .text(record.list), .integer(Int64(record.position)), .text(record.type), .integer(record.id)])
        }
    }

    package func createdRecords(document documentID: String) throws -> [CreatedRecord] {
        let rows = try query(
            "SELECT list, position, type, record_id FROM document_records WHERE document_id = $1 ORDER BY list, position",
            [.text(documentID)])
        return (0..<rows.count).map { row in
            CreatedRecord(
                list: rows.text(row, 0) ?? "", position: Int(rows.int(row, 1) ?? 0), type: rows.text(row, 2) ?? "",
                id: rows.int(row, 3) ?? 0)
        }
    }

    package func record(workspace: String, type: String, id: Int64) throws -> StoredRecord? {
        let rows = try query(
            "SELECT type, id, version, scope, payload FROM records WHERE workspace = $1 AND type = $2 AND id = $3\(lockingClause)",
            [.text(workspace), .text(type), .integer(id)])
        return rows.count == 1 ? Self.record(rows, 0) : nil
    }

    package func records(workspace: String) throws -> [StoredRecord] {
        let rows = try query(
            "SELECT type, id, version, scope, payload FROM records WHERE workspace = $1 ORDER BY type, id", [.text(workspace)])
        return (0..<rows.count).map { Self.record(rows, $0) }
    }

    package func putRecord(
        workspace: String, type: String, id: Int64, scope: String, payload: Data, files: [Int64], at now: Int64
    ) throws -> Int {
        try transaction {
            let old = try record(workspace: workspace, type: type, id: id)
            try setRecordFiles(workspace: workspace, type: type, id: id, files: files)
            let version = (old?.version ?? 0) + 1
            try query(
                """
                INSERT INTO records (workspace, type, id, version, scope, payload, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
                ON CONFLICT (workspace, type, id) DO UPDATE SET version = $4, scope = $5, payload = $6, updated_at = $7
                """, [.text(workspace), .text(type), .integer(id), .integer(Int64(version)), .text(scope), .bytes(payload), .integer(now)])
            if let old, old.scope != scope { try recordChange(workspace: workspace, type: type, id: id, scope: old.scope, deleted: true) }
            try recordChange(workspace: workspace, type: type, id: id, scope: scope, deleted: false)
            return version
        }
    }

    package func deleteRecord(workspace: String, type: String, id: Int64) throws -> Bool {
        try transaction {
            guard let old = try record(workspace: workspace, type: type, id: id) else { return false }
            try query("DELETE FROM records WHERE workspace = $1 AND type = $2 AND id = $3", [.text(workspace), .text(type), .integer(id)])
            try setRecordFiles(workspace: workspace, type: type, id: id, files: [])
            try recordChange(workspace: workspace, type: type, id: id, scope: old.scope, deleted: true)
            return true
        }
    }

    /// The change leaves the feed until the sequencer numbers it again, after the commit.
    private func recordChange(workspace: String, type: String, id: Int64, scope: String, deleted: Bool) throws {
        try query(
            """
            INSERT INTO changes (workspace, type, id, scope, deleted, seq) VALUES ($1, $2, $3, $4, $5::boolean, NULL)
            ON CONFLICT (workspace, type, id, scope) DO UPDATE SET deleted = $5::boolean, seq = NULL
            """, [.text(workspace), .text(type), .integer(id), .text(scope), .text(deleted ? "true" : "false")])
        pool.currentScope?.changesWritten = true
    }

    package func feed(
        workspace: String, principal: String?, selection: FeedSelection, after cursor: Int64, limit: Int
    ) throws -> [FeedEntry] {
        if try query("SELECT EXISTS (SELECT 1 FROM changes WHERE seq IS NULL)").int(0, 0) == 1 { try sequenceChanges() }
        let (clause, matches, values) = Self.clause(
            workspace: workspace, principal: principal, selection: selection, after: cursor, bound: limit)
        let rows = try query(
            """
            SELECT c.seq, c.type, c.id, c.deleted, r.version, r.payload, \(matches)
            FROM changes c LEFT JOIN records r ON r.workspace = c.workspace AND r.type = c.type AND r.id = c.id AND NOT c.deleted
            WHERE \(clause)
            ORDER BY c.seq LIMIT $3
            """, values)
        return (0..<rows.count).map { row in
            FeedEntry(
                seq: rows.int(row, 0) ?? 0, type: rows.text(row, 1) ?? "", id: rows.int(row, 2) ?? 0, deleted: rows.int(row, 3) == 1,
                version: Int(rows.int(row, 4) ?? 0), payload: rows.bytes(row, 5), outside: rows.int(row, 6) == 0)
        }
    }

    /// The feed's condition and its parameters: $1 the cursor, $2 the workspace, $3 the bound,
    /// $4 the principal when there is one (the back office's, nil: every scope, a deletion only
    /// when no record took the id again), then the selection's.
    static func clause(
        workspace: String, principal: String?, selection: FeedSelection, after cursor: Int64, bound: Int
    ) -> (
        String, String, [PostgresValue]
    ) {
        let visible =
            principal == nil
            ? "(NOT c.deleted OR NOT EXISTS (SELECT 1 FROM records g WHERE g.workspace = c.workspace AND g.type = c.type AND g.id = c.id))"
            : "(c.scope = '' OR c.scope = $4)"
        let (selected, matches, texts) = selection.sql(
            first: principal == nil ? 4 : 5, placeholder: { "$\($0)" }, field: { "(convert_from(r.payload, 'UTF8')::jsonb ->> '\($0)')" })
        let values: [PostgresValue] =
            [.integer(cursor), .text(workspace), .integer(Int64(bound))] + (principal.map { [.text($0)] } ?? [])
            + texts.map(PostgresValue.text)
        return ("c.seq IS NOT NULL AND c.seq > $1 AND c.workspace = $2 AND \(visible) AND \(selected)", matches, values)
    }

    package func feedRemaining(
        workspace: String, principal: String?, selection: FeedSelection, after cursor: Int64, cap: Int
    ) throws -> Int {
        let (clause, _, values) = Self.clause(workspace: workspace, principal: principal, selection: selection, after: cursor, bound: cap)
        let rows = try query(
            """
            SELECT COUNT(*) FROM (SELECT 1 FROM changes c
                LEFT JOIN records r ON r.workspace = c.workspace AND r.type = c.type AND r.id = c.id AND NOT c.deleted
                WHERE \(clause) LIMIT $3) s
            """, values)
        return Int(rows.int(0, 0) ?? 0)
    }

    package func lastChange() throws -> Int64 {
        try query("SELECT COALESCE(MAX(seq), 0) FROM changes").int(0, 0) ?? 0
    }

    /// The sequence's last number (every position comes from it): a change written again loses
    /// its number until the next pass, so the largest number in the table can be below a cursor
    /// a device was given.
    package func highestChangePosition() throws -> Int64 {
        try query("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM change_seq").int(0, 0) ?? 0
    }

    // MARK: Who may fetch a file

    package func mayRead(file id: Int64, workspace: String, principal: String) throws -> Bool {
        let found = try query(
            """
            SELECT EXISTS (SELECT 1 FROM files WHERE id = $1 AND workspace = $2 AND principal = $3)
                OR EXISTS (
                    SELECT 1 FROM record_files f JOIN records r ON r.workspace = f.workspace AND r.type = f.type AND r.id = f.id
                    WHERE f.workspace = $2 AND f.file_id = $1 AND (r.scope = '' OR r.scope = $3))
            """, [.integer(id), .text(workspace), .text(principal)])
        return found.count == 1 && found.int(0, 0) == 1
    }

    /// Makes `files` the files record (`workspace`, `type`, `id`) names.
    func setRecordFiles(workspace: String, type: String, id: Int64, files: [Int64]) throws {
        try query("DELETE FROM record_files WHERE workspace = $1 AND type = $2 AND id = $3", [.text(workspace), .text(type), .integer(id)])
        for file in Set(files) {
            try query(
                "INSERT INTO record_files (workspace, file_id, type, id) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                [.text(workspace), .integer(file), .text(type), .integer(id)])
        }
    }

    package func indexRecordFiles(_ files: (String, StoredRecord) -> [Int64]) throws {
        try transaction {
            try query("LOCK TABLE record_files_indexed IN EXCLUSIVE MODE")
            guard try query("SELECT COUNT(*) FROM record_files_indexed").int(0, 0) == 0 else { return }
            let rows = try query("SELECT workspace, type, id, version, scope, payload FROM records")
            for row in 0..<rows.count {
                let record = StoredRecord(
                    type: rows.text(row, 1) ?? "", id: rows.int(row, 2) ?? 0, version: Int(rows.int(row, 3) ?? 0),
                    scope: rows.text(row, 4) ?? "", payload: rows.bytes(row, 5) ?? Data())
                let workspace = rows.text(row, 0) ?? ""
                try setRecordFiles(workspace: workspace, type: record.type, id: record.id, files: files(workspace, record))
            }
            try query("INSERT INTO record_files_indexed (done) VALUES (1)")
        }
    }
}
