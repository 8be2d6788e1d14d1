import FormSyncModel
import FormSyncSQLite
import Foundation

/// The records the server owns and the change feed devices pull them by. `changes` keeps one
/// row per (record, scope) holding its latest change: a change takes a new sequence number, so
/// the feed in sequence order is commit order, and a cursor (the last number returned) resumes
/// exactly after what a device already has. A record that leaves a scope (deleted, or moved to
/// another courier) leaves a tombstone in the old scope.
/// (`SQLiteServerStore` serves them; used under its lock.)
final class SQLiteRecords: @unchecked Sendable {
    private let db: SQLiteConnection

    init(db: SQLiteConnection) {
        self.db = db
    }

    /// The next id for a document or a record: one sequence for both, since a record created
    /// by a document takes the document's id, and back-office records must not collide with it.
    /// The sequence steps over ids the back office chose itself, so that a seed with a large id
    /// (2^53 − 1 included) never exhausts it.
    func nextEntityID() throws -> Int64 {
        // The common case is one statement: take the next number and move the sequence on.
        let first = try db.query(Self.takeNextID, [.integer(SyncServer.maxEntityID)], { $0.int(0) }).first ?? SyncServer.maxEntityID
        var candidate = first
        // Ids the back office chose itself are stepped over.
        while try holder(ofID: candidate) != nil {
            guard candidate < SyncServer.maxEntityID else { throw ServerStoreError.idsExhausted }
            candidate += 1
        }
        guard candidate >= 1 else { throw ServerStoreError.idsExhausted }
        if candidate != first { try db.run("UPDATE id_sequence SET next = ?", [.integer(min(candidate + 1, SyncServer.maxEntityID))]) }
        return candidate
    }

    /// What holds `id`: a record's type, "" for a document that created no record under it, or
    /// nil when the id is free.
    func holder(ofID id: Int64) throws -> String? {
        try db.query(Self.holderQuery, [.integer(id)]) { row -> String? in
            if let type = row.text(0) { return type }
            return row.int(1) != 0 ? "" : nil
        }.first ?? nil
    }

    static let takeNextID = SQLiteConnection.Statement("UPDATE id_sequence SET next = next + 1 WHERE next < ? RETURNING next - 1")

    static let holderQuery = SQLiteConnection.Statement(
        "SELECT (SELECT type FROM records WHERE id = ?1 LIMIT 1), EXISTS (SELECT 1 FROM documents WHERE id = ?1)")

    func noteCreatedRecords(document documentID: String, _ records: [CreatedRecord]) throws {
        for record in records {
            try db.run(
                "INSERT INTO document_records (document_id, list, position, type, record_id) VALUES (?, ?, ?, ?, ?)",
                [.text(documentID), .text(record.list), .integer(Int64(record.position)), .text(record.type), .integer(record.id)])
        }
    }

    func createdRecords(document documentID: String) throws -> [CreatedRecord] {
        try db.query(
            "SELECT list, position, type, record_id FROM document_records WHERE document_id = ? ORDER BY list, position",
            [.text(documentID)]
        ) { CreatedRecord(list: $0.text(0) ?? "", position: Int($0.int(1)), type: $0.text(2) ?? "", id: $0.int(3)) }
    }

    func record(workspace: String, type: String, id: Int64) throws -> StoredRecord? {
        try db.query(
            "SELECT type, id, version, scope, payload FROM records WHERE workspace = ? AND type = ? AND id = ?",
            [.text(workspace), .text(type), .integer(id)]
        ) { row in
            StoredRecord(
                type: row.text(0) ?? "", id: row.int(1), version: Int(row.int(2)), scope: row.text(3) ?? "", payload: row.blob(4) ?? Data())
        }.first
    }

    func records(workspace: String) throws -> [StoredRecord] {
        try db.query("SELECT type, id, version, scope, payload FROM records WHERE workspace = ? ORDER BY type, id", [.text(workspace)]) {
            row in
            StoredRecord(
                type: row.text(0) ?? "", id: row.int(1), version: Int(row.int(2)), scope: row.text(3) ?? "", payload: row.blob(4) ?? Data())
        }
    }

    /// Writes a record's new state (version + 1) and its change; a record that changed scope
    /// leaves a tombstone in the old one. Returns the new version.
    func putRecord(workspace: String, type: String, id: Int64, scope: String, payload: Data, files: [Int64], at now: Int64) throws -> Int {
        let old = try record(workspace: workspace, type: type, id: id)
        try setRecordFiles(workspace: workspace, type: type, id: id, files: files)
        let version = (old?.version ?? 0) + 1
        try db.run(
            "INSERT OR REPLACE INTO records (workspace, type, id, version, scope, payload, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [.text(workspace), .text(type), .integer(id), .integer(Int64(version)), .text(scope), .blob(payload), .integer(now)])
        if let old, old.scope != scope { try recordChange(workspace: workspace, type: type, id: id, scope: old.scope, deleted: true) }
        try recordChange(workspace: workspace, type: type, id: id, scope: scope, deleted: false)
        return version
    }

    /// Removes a record; its scope's feed carries the deletion. False when there was none.
    func deleteRecord(workspace: String, type: String, id: Int64) throws -> Bool {
        guard let old = try record(workspace: workspace, type: type, id: id) else { return false }
        try db.run("DELETE FROM records WHERE workspace = ? AND type = ? AND id = ?", [.text(workspace), .text(type), .integer(id)])
        try setRecordFiles(workspace: workspace, type: type, id: id, files: [])
        try recordChange(workspace: workspace, type: type, id: id, scope: old.scope, deleted: true)
        return true
    }

    private func recordChange(workspace: String, type: String, id: Int64, scope: String, deleted: Bool) throws {
        try db.run(
            "INSERT OR REPLACE INTO changes (workspace, type, id, scope, deleted) VALUES (?, ?, ?, ?, ?)",
            [.text(workspace), .text(type), .integer(id), .text(scope), .integer(deleted ? 1 : 0)])
    }

    /// Up to `limit` feed entries after `cursor` that `selection` holds, for a device of
    /// `principal` (unscoped records and those scoped to it), or for the back office (`principal`
    /// nil: every record of the workspace, and the removal of a record only once it is gone from
    /// every scope), in commit order.
    func feed(workspace: String, principal: String?, selection: FeedSelection, after cursor: Int64, limit: Int) throws -> [FeedEntry] {
        let (sql, values) = Self.feedQuery(workspace: workspace, principal: principal, selection: selection, after: cursor, limit: limit)
        return try db.query(sql, values) { row in
            FeedEntry(
                seq: row.int(0), type: row.text(1) ?? "", id: row.int(2), deleted: row.int(3) != 0, version: Int(row.optionalInt(4) ?? 0),
                payload: row.blob(5), outside: row.int(6) == 0)
        }
    }

    /// `feed`'s statement and its parameters.
    static func feedQuery(
        workspace: String, principal: String?, selection: FeedSelection, after cursor: Int64, limit: Int
    ) -> (sql: String, values: [SQLValue]) {
        let (clause, matches, values) = clause(
            workspace: workspace, principal: principal, selection: selection, after: cursor, bound: limit)
        let sql = """
            SELECT c.seq, c.type, c.id, c.deleted, r.version, r.payload, \(matches)
            FROM changes c LEFT JOIN records r ON r.workspace = c.workspace AND r.type = c.type AND r.id = c.id AND c.deleted = 0
            WHERE \(clause)
            ORDER BY c.seq LIMIT ?3
            """
        return (sql, values)
    }

    /// `feedRemaining`'s statement and its parameters.
    static func remainingQuery(
        workspace: String, principal: String?, selection: FeedSelection, after cursor: Int64, cap: Int
    ) -> (sql: String, values: [SQLValue]) {
        let (clause, _, values) = clause(workspace: workspace, principal: principal, selection: selection, after: cursor, bound: cap)
        // Only a subscription's condition reads the record: a count of any other feed needs no
        // look-up of each change's record (100,000 of them at a new device's first page).
        let join =
            clause.contains("r.payload")
            ? "LEFT JOIN records r ON r.workspace = c.workspace AND r.type = c.type AND r.id = c.id AND c.deleted = 0" : ""
        return ("SELECT COUNT(*) FROM (SELECT 1 FROM changes c \(join) WHERE \(clause) LIMIT ?3)", values)
    }

    /// The feed's condition and its parameters: ?1 the cursor, ?2 the workspace, ?3 the bound,
    /// ?4 the principal when there is one, then the selection's.
    private static func clause(
        workspace: String, principal: String?, selection: FeedSelection, after cursor: Int64, bound: Int
    ) -> (
        String, String, [SQLValue]
    ) {
        let visible =
            principal == nil
            ? "(c.deleted = 0 OR NOT EXISTS (SELECT 1 FROM records g WHERE g.workspace = c.workspace AND g.type = c.type AND g.id = c.id))"
            : "(c.scope = '' OR c.scope = ?4)"
        let first = principal == nil ? 4 : 5
        let (selected, matches, texts) = selection.sql(
            first: first, placeholder: { "?\($0)" },
            field: { "CAST(json_extract(CAST(r.payload AS TEXT), '$.\($0)') AS TEXT)" })
        let values: [SQLValue] =
            [.integer(cursor), .text(workspace), .integer(Int64(bound))] + (principal.map { [.text($0)] } ?? []) + texts.map(SQLValue.text)
        return ("c.seq > ?1 AND c.workspace = ?2 AND \(visible) AND \(selected)", matches, values)
    }

    /// How many feed entries `feed` would give after `cursor`, counted up to `cap`.
    func feedRemaining(workspace: String, principal: String?, selection: FeedSelection, after cursor: Int64, cap: Int) throws -> Int {
        let (sql, values) = Self.remainingQuery(workspace: workspace, principal: principal, selection: selection, after: cursor, cap: cap)
        return Int(try db.query(sql, values) { $0.int(0) }.first ?? 0)
    }

    /// The highest sequence number handed out; a cursor beyond it comes from another database.
    func lastChange() throws -> Int64 {
        try db.query("SELECT COALESCE(MAX(seq), 0) FROM changes", [], { $0.int(0) }).first ?? 0
    }

    /// Makes `files` the files record (`workspace`, `type`, `id`) names.
    func setRecordFiles(workspace: String, type: String, id: Int64, files: [Int64]) throws {
        try db.run("DELETE FROM record_files WHERE workspace = ? AND type = ? AND id = ?", [.text(workspace), .text(type), .integer(id)])
        for file in Set(files) {
            try db.run(
                "INSERT INTO record_files (workspace, file_id, type, id) VALUES (?, ?, ?, ?)",
                [.text(workspace), .integer(file), .text(type), .integer(id)])
        }
    }
}
