import Foundation
import FormSyncModel
import FormSyncSQLite

/// The device's copy of the records in its scope, in the outbox's own database (one writer):
/// `records` holds each record's fields and version, `record_index` the values of its indexed
/// fields for local queries, `pull_cursors` where the feed resumes. A page of the feed and its
/// cursor commit in one transaction.
extension OutboxStore {

    func addTombstone(workspace: String, type: String, id: Int64) throws {
        try db.run("INSERT OR IGNORE INTO record_tombstones (workspace, type, id) VALUES (?, ?, ?)", [.text(workspace), .text(type), .integer(id)])
    }

    func removeTombstone(workspace: String, type: String, id: Int64) throws {
        try db.run("DELETE FROM record_tombstones WHERE workspace = ? AND type = ? AND id = ?", [.text(workspace), .text(type), .integer(id)])
    }

    /// Whether the workspace has any tombstone: a pull page need not clear them one by one
    /// when it has none (the initial pull of a whole round, for one).
    func hasTombstones(workspace: String) throws -> Bool {
        try !db.query("SELECT 1 FROM record_tombstones WHERE workspace = ? LIMIT 1", [.text(workspace)]) { $0.int(0) }.isEmpty
    }

    func hasTombstone(workspace: String, type: String, id: Int64) throws -> Bool {
        try !db.query("SELECT 1 FROM record_tombstones WHERE workspace = ? AND type = ? AND id = ?", [.text(workspace), .text(type), .integer(id)]) { $0.int(0) }.isEmpty
    }

    /// Makes each registered type's index match the fields its spec indexes now: an app update
    /// that indexes another field (or stops indexing one) gets its index rebuilt from the stored
    /// records, once, when the outbox opens.
    func reindex(_ types: RecordRegistry) throws {
        for name in types.names {
            guard let entry = types[name] else { continue }
            let fields = entry.indexedFields.joined(separator: ",")
            let stored = try db.query("SELECT fields FROM record_index_fields WHERE type = ?", [.text(name)]) { $0.text(0) }.first ?? nil
            if stored == fields { continue }
            try db.transaction(.normal) {
                try db.run("DELETE FROM record_index WHERE workspace IN (SELECT DISTINCT workspace FROM records) AND type = ?", [.text(name)])
                let rows = try db.query("SELECT workspace, id, payload FROM records WHERE type = ?", [.text(name)]) { ($0.text(0) ?? "", $0.int(1), $0.blob(2) ?? Data()) }
                for (workspace, id, payload) in rows {
                    for index in (try? entry.indexEntries(payload)) ?? [] {
                        try db.run("INSERT OR IGNORE INTO record_index (workspace, type, field, value, id) VALUES (?, ?, ?, ?, ?)",
                                   [.text(workspace), .text(name), .text(index.field), .text(index.value), .integer(id)])
                    }
                }
                try db.run("INSERT OR REPLACE INTO record_index_fields (type, fields) VALUES (?, ?)", [.text(name), .text(fields)])
            }
        }
    }

    /// A stored record: its fields' JSON and version.
    struct StoredRecord {
        var id: Int64
        var version: Int
        var payload: Data
    }

    func storedRecord(workspace: String, type: String, id: Int64) throws -> StoredRecord? {
        try db.query("SELECT id, version, payload FROM records WHERE workspace = ? AND type = ? AND id = ?",
                     [.text(workspace), .text(type), .integer(id)]) { StoredRecord(id: $0.int(0), version: Int($0.int(1)), payload: $0.blob(2) ?? Data()) }.first
    }

    func storedRecords(workspace: String, type: String) throws -> [StoredRecord] {
        try db.query("SELECT id, version, payload FROM records WHERE workspace = ? AND type = ? ORDER BY id",
                     [.text(workspace), .text(type)]) { StoredRecord(id: $0.int(0), version: Int($0.int(1)), payload: $0.blob(2) ?? Data()) }
    }

    func storedRecords(workspace: String, type: String, field: String, value: String) throws -> [StoredRecord] {
        try db.query("""
            SELECT r.id, r.version, r.payload FROM record_index i
            JOIN records r ON r.workspace = i.workspace AND r.type = i.type AND r.id = i.id
            WHERE i.workspace = ? AND i.type = ? AND i.field = ? AND i.value = ? ORDER BY i.id
            """, [.text(workspace), .text(type), .text(field), .text(value)]) { StoredRecord(id: $0.int(0), version: Int($0.int(1)), payload: $0.blob(2) ?? Data()) }
    }

    func recordCount(workspace: String) throws -> Int {
        Int(try db.query("SELECT COUNT(*) FROM records WHERE workspace = ?", [.text(workspace)]) { $0.int(0) }.first ?? 0)
    }

    /// Writes a record's state unless the store already holds a newer version of it; the index
    /// follows. False when the change was older than what is stored.
    func upsertRecord(workspace: String, type: String, id: Int64, version: Int, payload: Data, index: [RecordIndexEntry], oldIndex: (Data) -> [RecordIndexEntry]) throws -> Bool {
        // A record new to the device, as every record of a first pull is, takes one insert.
        let inserted = try db.run(
            "INSERT INTO records (workspace, type, id, version, payload) VALUES (?, ?, ?, ?, ?) ON CONFLICT (workspace, type, id) DO NOTHING",
            [.text(workspace), .text(type), .integer(id), .integer(Int64(version)), .blob(payload)]) == 1
        if !inserted {
            if let old = try db.query("SELECT version, payload FROM records WHERE workspace = ? AND type = ? AND id = ?",
                                      [.text(workspace), .text(type), .integer(id)], { (Int($0.int(0)), $0.blob(1) ?? Data()) }).first {
                guard old.0 <= version else { return false }
                for entry in oldIndex(old.1) {
                    try db.run("DELETE FROM record_index WHERE workspace = ? AND type = ? AND field = ? AND value = ? AND id = ?",
                               [.text(workspace), .text(type), .text(entry.field), .text(entry.value), .integer(id)])
                }
            }
            try db.run("INSERT OR REPLACE INTO records (workspace, type, id, version, payload) VALUES (?, ?, ?, ?, ?)",
                       [.text(workspace), .text(type), .integer(id), .integer(Int64(version)), .blob(payload)])
        }
        for entry in index {
            try db.run("INSERT OR IGNORE INTO record_index (workspace, type, field, value, id) VALUES (?, ?, ?, ?, ?)",
                       [.text(workspace), .text(type), .text(entry.field), .text(entry.value), .integer(id)])
        }
        return true
    }

    /// Removes a record and its index entries; false when there was none.
    func deleteRecord(workspace: String, type: String, id: Int64, oldIndex: (Data) -> [RecordIndexEntry]) throws -> Bool {
        guard let old = try storedRecord(workspace: workspace, type: type, id: id) else { return false }
        for entry in oldIndex(old.payload) {
            try db.run("DELETE FROM record_index WHERE workspace = ? AND type = ? AND field = ? AND value = ? AND id = ?",
                       [.text(workspace), .text(type), .text(entry.field), .text(entry.value), .integer(id)])
        }
        return try db.run("DELETE FROM records WHERE workspace = ? AND type = ? AND id = ?", [.text(workspace), .text(type), .integer(id)]) > 0
    }

    /// Forgets every record and the cursor of a workspace (before a pull from the start).
    func clearRecords(workspace: String) throws {
        try db.run("DELETE FROM record_index WHERE workspace = ?", [.text(workspace)])
        try db.run("DELETE FROM records WHERE workspace = ?", [.text(workspace)])
        try db.run("DELETE FROM record_tombstones WHERE workspace = ?", [.text(workspace)])
        try db.run("DELETE FROM pull_cursors WHERE workspace = ?", [.text(workspace)])
    }

    func pullCursor(workspace: String) throws -> String? {
        try db.query("SELECT cursor FROM pull_cursors WHERE workspace = ?", [.text(workspace)]) { $0.text(0) }.first ?? nil
    }

    func setPullCursor(_ cursor: String, workspace: String, at now: Int64) throws {
        try db.run("INSERT OR REPLACE INTO pull_cursors (workspace, cursor, pulled_at) VALUES (?, ?, ?)", [.text(workspace), .text(cursor), .integer(now)])
    }

    /// The server id a placeholder landed as, in `workspace`.
    /// The placeholder of this device that landed as `serverID`, if one did.
    func placeholder(resolvedTo serverID: Int64, workspace: String) throws -> Int64? {
        try db.query("SELECT placeholder FROM resolved WHERE workspace = ? AND server_id = ?", [.text(workspace), .integer(serverID)]) { $0.int(0) }.first
    }

    /// Whether `lane` holds an open item (pending, waiting for a dependency, or on the wire).
    func hasOpenItems(workspace: String, lane: String) throws -> Bool {
        try !db.query(
            "SELECT 1 FROM items WHERE workspace = ? AND lane = ? AND \(Self.openCondition) LIMIT 1", [.text(workspace), .text(lane)]
        ) { $0.int(0) }.isEmpty
    }

    func resolvedID(_ placeholder: Int64, workspace: String) throws -> Int64? {
        try db.query("SELECT server_id FROM resolved WHERE workspace = ? AND placeholder = ?", [.text(workspace), .integer(placeholder)]) { $0.int(0) }.first
    }

    /// The submissions of `forms` not yet confirmed, oldest first: what the device shows on top
    /// of the records it pulled.
    func unconfirmedSubmissions(workspace: String, forms: [String]) throws -> [Row] {
        guard !forms.isEmpty else { return [] }
        let marks = forms.indices.map { "?\($0 + 2)" }.joined(separator: ", ")
        // Open ones through `items_open`, parked ones through `items_state`.
        return try db.query("""
            SELECT \(Self.columns) FROM items WHERE workspace = ?1 AND \(Self.openCondition) AND kind = 'submission' AND form IN (\(marks))
            UNION ALL
            SELECT \(Self.columns) FROM items WHERE workspace = ?1 AND \(Self.settledCondition) AND state != 'confirmed' AND kind = 'submission' AND form IN (\(marks))
            ORDER BY id
            """,
            [.text(workspace)] + forms.map { .text($0) }, Self.row)
    }
}
