import FormSyncModel
import FormSyncSQLite
import Foundation

/// The device's copy of the records in its scope, in the outbox's own database (one writer):
/// `records` holds each record's fields and version, and the values of its indexed fields in
/// columns `key1` … `key8` (the type's indexed fields in spec order) under SQLite's own partial
/// indexes; `pull_cursors` says where the feed resumes. A page of the feed and its cursor
/// commit in one transaction. Each is kept per view (`PersonalView`): the workspace, or on a
/// shared phone the workspace and the person.
extension OutboxStore {
    /// How many fields of one record type the device indexes (the spec checker's limit too).
    static let recordKeySlots = 8

    /// A record's key columns: the values of `entries` in the order of `fields` (nil where the
    /// record has no value, and for fields past the last slot).
    static func recordKeys(_ entries: [RecordIndexEntry], fields: [String]) -> [String?] {
        var keys = [String?](repeating: nil, count: recordKeySlots)
        for entry in entries {
            if let slot = fields.firstIndex(of: entry.field), slot < recordKeySlots { keys[slot] = entry.value }
        }
        return keys
    }

    /// Drops the indexes of the first `slots` keys (those the device's record types use), for a
    /// pull into an empty store: its records are then one B-tree insert each, and
    /// `ensureRecordKeyIndexes` builds each index once, sorted, at its end (the unused slots'
    /// indexes stay: a record with no value there costs them nothing, and building one means
    /// reading every record). Queries stay correct meanwhile (they scan).
    func dropRecordKeyIndexes(slots: Int) throws {
        for slot in stride(from: 1, through: min(slots, Self.recordKeySlots), by: 1) {
            try db.run("DROP INDEX IF EXISTS records_key\(slot)")
        }
    }

    /// Creates any key index that is missing (after a pull that dropped them, or at open after
    /// a process was killed during one).
    func ensureRecordKeyIndexes() throws {
        for slot in 1...Self.recordKeySlots {
            try db.run("CREATE INDEX IF NOT EXISTS records_key\(slot) ON records(view, type, key\(slot)) WHERE key\(slot) IS NOT NULL")
        }
    }

    /// Whether any view holds a record.
    func hasRecords() throws -> Bool {
        try !db.query("SELECT 1 FROM records LIMIT 1") { $0.int(0) }.isEmpty
    }

    func addTombstone(view: String, type: String, id: Int64) throws {
        try db.run(
            "INSERT OR IGNORE INTO record_tombstones (view, type, id) VALUES (?, ?, ?)", [.text(view), .text(type), .integer(id)])
    }

    func removeTombstone(view: String, type: String, id: Int64) throws {
        try db.run(
            "DELETE FROM record_tombstones WHERE view = ? AND type = ? AND id = ?", [.text(view), .text(type), .integer(id)])
    }

    /// Whether the view has any tombstone: a pull page need not clear them one by one
    /// when it has none (the initial pull of a whole round, for one).
    func hasTombstones(view: String) throws -> Bool {
        try !db.query("SELECT 1 FROM record_tombstones WHERE view = ? LIMIT 1", [.text(view)]) { $0.int(0) }.isEmpty
    }

    func hasTombstone(view: String, type: String, id: Int64) throws -> Bool {
        try !db.query(
            "SELECT 1 FROM record_tombstones WHERE view = ? AND type = ? AND id = ?", [.text(view), .text(type), .integer(id)]
        ) { $0.int(0) }.isEmpty
    }

    /// Makes each registered type's keys match the fields its spec indexes now: an app update
    /// that indexes another field (or stops indexing one) gets its keys rebuilt from the stored
    /// records, once, when the outbox opens.
    func reindex(_ types: RecordRegistry) throws {
        try ensureRecordKeyIndexes()
        for name in types.names {
            guard let entry = types[name] else { continue }
            let fields = entry.indexedFields.joined(separator: ",")
            let stored = try db.query("SELECT fields FROM record_index_fields WHERE type = ?", [.text(name)]) { $0.text(0) }.first ?? nil
            if stored == fields { continue }
            try db.transaction(.normal) {
                let rows = try db.query("SELECT view, id, payload FROM records WHERE type = ?", [.text(name)]) {
                    ($0.text(0) ?? "", $0.int(1), $0.blob(2) ?? Data())
                }
                for (view, id, payload) in rows {
                    let keys = Self.recordKeys((try? entry.indexEntries(payload)) ?? [], fields: entry.indexedFields)
                    try db.run(
                        "UPDATE records SET \(Self.keyAssignments) WHERE view = ? AND type = ? AND id = ?",
                        keys.map { $0.map(SQLValue.text) ?? .null } + [.text(view), .text(name), .integer(id)])
                }
                try db.run("INSERT OR REPLACE INTO record_index_fields (type, fields) VALUES (?, ?)", [.text(name), .text(fields)])
            }
        }
    }

    private static let keyColumns = (1...recordKeySlots).map { "key\($0)" }.joined(separator: ", ")
    private static let keyPlaceholders = Array(repeating: "?", count: recordKeySlots).joined(separator: ", ")
    private static let keyAssignments = (1...recordKeySlots).map { "key\($0) = ?" }.joined(separator: ", ")
    private static let keyUpdates = (1...recordKeySlots).map { "key\($0) = excluded.key\($0)" }.joined(separator: ", ")

    /// A stored record: its fields' JSON and version.
    struct StoredRecord {
        var id: Int64
        var version: Int
        var payload: Data
    }

    func storedRecord(view: String, type: String, id: Int64) throws -> StoredRecord? {
        try db.query(
            "SELECT id, version, payload FROM records WHERE view = ? AND type = ? AND id = ?",
            [.text(view), .text(type), .integer(id)]
        ) { StoredRecord(id: $0.int(0), version: Int($0.int(1)), payload: $0.blob(2) ?? Data()) }.first
    }

    func storedRecords(view: String, type: String) throws -> [StoredRecord] {
        try db.query(
            "SELECT id, version, payload FROM records WHERE view = ? AND type = ? ORDER BY id",
            [.text(view), .text(type)]
        ) { StoredRecord(id: $0.int(0), version: Int($0.int(1)), payload: $0.blob(2) ?? Data()) }
    }

    /// The records of a type whose key in `slot` (0-based: the type's indexed fields in spec
    /// order) is `value`, by id. The ids come from the key's index alone (a covering search),
    /// then each row by its primary key: asked for the rows directly, SQLite's planner would
    /// rather walk every record of the type in id order.
    func storedRecords(view: String, type: String, slot: Int, value: String) throws -> [StoredRecord] {
        try db.query(
            """
            SELECT id, version, payload FROM records WHERE view = ?1 AND type = ?2
            AND id IN (SELECT id FROM records WHERE view = ?1 AND type = ?2 AND key\(slot + 1) = ?3) ORDER BY id
            """, [.text(view), .text(type), .text(value)]
        ) { StoredRecord(id: $0.int(0), version: Int($0.int(1)), payload: $0.blob(2) ?? Data()) }
    }

    func recordCount(view: String) throws -> Int {
        Int(try db.query("SELECT COUNT(*) FROM records WHERE view = ?", [.text(view)]) { $0.int(0) }.first ?? 0)
    }

    /// Writes a record's state and keys unless the store already holds a newer version of it:
    /// one statement, which SQLite's indexes follow. False when the change was older than what
    /// is stored.
    func upsertRecord(view: String, type: String, id: Int64, version: Int, payload: Data, keys: [String?]) throws -> Bool {
        try upsertRecords(view: view, [RecordRow(type: type, id: id, version: version, payload: payload, keys: keys)]) == [true]
    }

    /// One record of a batch for `upsertRecords`.
    struct RecordRow {
        var type: String
        var id: Int64
        var version: Int
        var payload: Data
        var keys: [String?]
    }

    /// Writes `rows` in order, each as `upsertRecord` would, in statements of many rows (a
    /// pull's page: one statement per record costs SQLite a third more per record). Returns,
    /// for each row, whether it was written; one older than what is stored is not.
    func upsertRecords(view: String, _ rows: [RecordRow]) throws -> [Bool] {
        var written: [Bool] = []
        written.reserveCapacity(rows.count)
        var start = 0
        while start < rows.count {
            let statement = Self.upsertBatches.first { $0.rows <= rows.count - start } ?? Self.upsertBatches[Self.upsertBatches.count - 1]
            let chunk = rows[start..<(start + statement.rows)]
            let changed = try db.run(statement.statement) { values in
                for (row, record) in chunk.enumerated() {
                    let base = Int32(row * (5 + Self.recordKeySlots))
                    values.text(base + 1, view)
                    values.text(base + 2, record.type)
                    values.integer(base + 3, record.id)
                    values.integer(base + 4, Int64(record.version))
                    values.blob(base + 5, record.payload)
                    for (slot, key) in record.keys.prefix(Self.recordKeySlots).enumerated() where key != nil {
                        values.text(base + 6 + Int32(slot), key)
                    }
                }
            }
            if changed == chunk.count {
                written.append(contentsOf: repeatElement(true, count: chunk.count))
            } else {
                // Some row was older than the stored record: the stored versions say which
                // were written (a record twice in the batch is written by its newest).
                for record in chunk {
                    written.append(try storedRecord(view: view, type: record.type, id: record.id)?.version == record.version)
                }
            }
            start += chunk.count
        }
        return written
    }

    /// The multi-row forms of the upsert, largest first; the last writes one row. Declared
    /// once: a pull runs them for every record, and a statement found by its text would hash
    /// its characters each time.
    private static let upsertBatches = [64, 8, 1].map { (rows: $0, statement: upsertStatement(rows: $0)) }

    private static func upsertStatement(rows: Int) -> SQLiteConnection.Statement {
        let row = "(?, ?, ?, ?, ?, \(keyPlaceholders))"
        return SQLiteConnection.Statement(
            """
            INSERT INTO records (view, type, id, version, payload, \(keyColumns)) VALUES \(Array(repeating: row, count: rows).joined(separator: ", "))
            ON CONFLICT (view, type, id) DO UPDATE SET version = excluded.version, payload = excluded.payload, \(keyUpdates)
            WHERE excluded.version >= records.version
            """)
    }

    /// Removes a record; false when there was none.
    func deleteRecord(view: String, type: String, id: Int64) throws -> Bool {
        try db.run("DELETE FROM records WHERE view = ? AND type = ? AND id = ?", [.text(view), .text(type), .integer(id)]) > 0
    }

    /// The workspaces that hold items (the views of `counts`) or records, sorted.
    func workspaceNames(counts: [String: [State: Int]]) throws -> [String] {
        Set(Set(counts.keys).union(try recordViews()).map { PersonalView(key: $0).workspace }).sorted()
    }

    /// How many records the device holds for `workspace` (every workspace when nil), every
    /// person's.
    func recordCount(workspace: String?) throws -> Int {
        try recordViews().filter { workspace == nil || PersonalView(key: $0).workspace == workspace }
            .reduce(0) { $0 + (try recordCount(view: $1)) }
    }

    /// The views that hold pulled records or a feed cursor.
    func recordViews() throws -> [String] {
        try db.query("SELECT view FROM records UNION SELECT view FROM pull_cursors UNION SELECT view FROM reviews") { $0.text(0) ?? "" }
    }

    /// Forgets every record and the cursor of a view (before a pull from the start); its
    /// subscriptions are kept, their feeds to start again too.
    func clearRecords(view: String) throws {
        try db.run("DELETE FROM records WHERE view = ?", [.text(view)])
        try db.run("DELETE FROM subscription_records WHERE view = ?", [.text(view)])
        try db.run("UPDATE subscriptions SET cursor = NULL WHERE view = ?", [.text(view)])
        try db.run("DELETE FROM record_tombstones WHERE view = ?", [.text(view)])
        try db.run("DELETE FROM pull_cursors WHERE view = ?", [.text(view)])
    }

    func pullCursor(view: String) throws -> String? {
        try db.query("SELECT cursor FROM pull_cursors WHERE view = ?", [.text(view)]) { $0.text(0) }.first ?? nil
    }

    func setPullCursor(_ cursor: String, view: String, at now: Int64) throws {
        try db.run(
            "INSERT OR REPLACE INTO pull_cursors (view, cursor, pulled_at) VALUES (?, ?, ?)",
            [.text(view), .text(cursor), .integer(now)])
    }

    /// The placeholder of this device that landed as `serverID` in `workspace`, if one did.
    func placeholder(resolvedTo serverID: Int64, workspace: String) throws -> Int64? {
        try db.query("SELECT placeholder FROM resolved WHERE workspace = ? AND server_id = ?", [.text(workspace), .integer(serverID)]) {
            $0.int(0)
        }.first
    }

    /// Whether `lane` holds an open item (pending, waiting for a dependency, or on the wire).
    func hasOpenItems(workspace: String, lane: String) throws -> Bool {
        try !db.query(
            "SELECT 1 FROM items WHERE workspace = ? AND lane = ? AND \(Self.openCondition) LIMIT 1", [.text(workspace), .text(lane)]
        ) { $0.int(0) }.isEmpty
    }

    func resolvedID(_ placeholder: Int64, workspace: String) throws -> Int64? {
        try db.query("SELECT server_id FROM resolved WHERE workspace = ? AND placeholder = ?", [.text(workspace), .integer(placeholder)]) {
            $0.int(0)
        }.first
    }

    /// `principal`'s submissions of `forms` not yet confirmed, oldest first: what the device
    /// shows that person on top of the records they pulled.
    func unconfirmedSubmissions(workspace: String, principal: String?, forms: [String]) throws -> [Row] {
        guard !forms.isEmpty else { return [] }
        let marks = forms.indices.map { "?\($0 + 2)" }.joined(separator: ", ")
        // Open ones through `items_open`, parked ones through `items_state`.
        return try db.query(
            """
            SELECT \(Self.columns) FROM items WHERE workspace = ?1 AND \(Self.openCondition) AND kind = 'submission' AND form IN (\(marks))
            UNION ALL
            SELECT \(Self.columns) FROM items WHERE workspace = ?1 AND \(Self.settledCondition) AND state != 'confirmed' AND kind = 'submission' AND form IN (\(marks))
            ORDER BY id
            """,
            [.text(workspace)] + forms.map { .text($0) }, Self.row
        ).filter { $0.principal == principal }
    }

    /// The open (pending, leased or blocked) submissions of `forms` in `workspace`, everyone's.
    func openSubmissions(workspace: String, forms: [String]) throws -> [Row] {
        guard !forms.isEmpty else { return [] }
        let marks = forms.indices.map { "?\($0 + 2)" }.joined(separator: ", ")
        return try db.query(
            "SELECT \(Self.columns) FROM items WHERE workspace = ?1 AND \(Self.openCondition) AND kind = 'submission' AND form IN (\(marks)) ORDER BY id",
            [.text(workspace)] + forms.map { .text($0) }, Self.row)
    }
}
