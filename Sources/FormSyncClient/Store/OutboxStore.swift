import Foundation
import FormSyncModel
import FormSyncSQLite

/// The outbox's tables and every query it runs. Each lookup the scheduler makes goes through an
/// index keyed by lane or by id, so one step costs the same whatever the queue's length:
/// `lanes` holds one row per lane with work, naming its head item and when that head is due.
final class OutboxStore {
    let db: SQLiteConnection

    /// Stored states. `pending` and `leased` are open (in the lane); the rest are not.
    enum State: String {
        case pending, leased, confirmed, rejected, conflict, exhausted, blocked
    }

    static let migrations = SQLiteMigrator(migrations: [
        .init(version: 1, name: "outbox", sql: """
            CREATE TABLE items (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                kind TEXT NOT NULL,
                workspace TEXT NOT NULL,
                lane TEXT NOT NULL,
                document_id TEXT NOT NULL,
                attempt_id TEXT NOT NULL,
                form TEXT,
                form_version INTEGER,
                payload BLOB,
                endpoint TEXT,
                base_payload BLOB,
                base_version TEXT,
                produces INTEGER UNIQUE,
                server_id INTEGER,
                server_version TEXT,
                file_path TEXT,
                content_type TEXT,
                byte_count INTEGER,
                sha256 BLOB,
                state TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at INTEGER NOT NULL,
                lease_expires_at INTEGER,
                last_error TEXT,
                field_errors BLOB,
                server_payload BLOB,
                conflicts BLOB,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            );
            CREATE UNIQUE INDEX items_attempt ON items(attempt_id);
            CREATE INDEX items_open ON items(workspace, lane, id) WHERE state IN ('pending', 'leased');
            CREATE INDEX items_state ON items(workspace, state, id);
            CREATE TABLE dependencies (
                item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
                placeholder INTEGER NOT NULL,
                PRIMARY KEY (item_id, placeholder)
            ) WITHOUT ROWID;
            CREATE INDEX dependencies_placeholder ON dependencies(placeholder);
            CREATE TABLE resolved (placeholder INTEGER PRIMARY KEY, server_id INTEGER NOT NULL);
            CREATE TABLE lanes (
                workspace TEXT NOT NULL,
                lane TEXT NOT NULL,
                head INTEGER NOT NULL,
                due_at INTEGER,
                PRIMARY KEY (workspace, lane)
            ) WITHOUT ROWID;
            CREATE INDEX lanes_due ON lanes(workspace, due_at) WHERE due_at IS NOT NULL;
            """),
    ])

    init(path: String, now: Int64) throws {
        db = try SQLiteConnection(path: path)
        try Self.migrations.migrate(db, now: now)
    }

    // MARK: Rows

    /// The columns of an item the outbox works with.
    struct Row {
        var id: Int64
        var kind: OutboxItem.Kind
        var workspace: String
        var lane: String
        var documentID: String
        var attemptID: String
        var form: String?
        var formVersion: Int?
        var payload: Data?
        var basePayload: Data?
        var baseVersion: String?
        var produces: Int64?
        var serverID: Int64?
        var serverVersion: String?
        var filePath: String?
        var contentType: String?
        var byteCount: Int64?
        var sha256: Data?
        var state: State
        var attempts: Int
        var nextAttemptAt: Int64
        var leaseExpiresAt: Int64?
        var lastError: String?
        var fieldErrors: Data?
        var serverPayload: Data?
        var conflicts: Data?
        /// The endpoint computed at enqueue; used as is while the payload holds no placeholders.
        var endpoint: String?
    }

    static let columns = """
        id, kind, workspace, lane, document_id, attempt_id, form, form_version, payload, base_payload, base_version,
        produces, server_id, server_version, file_path, content_type, byte_count, sha256, state, attempts,
        next_attempt_at, lease_expires_at, last_error, field_errors, server_payload, conflicts, endpoint
        """

    static func row(_ r: SQLiteConnection.Row) -> Row {
        Row(
            id: r.int(0), kind: OutboxItem.Kind(rawValue: r.text(1) ?? "") ?? .submission, workspace: r.text(2) ?? "",
            lane: r.text(3) ?? "", documentID: r.text(4) ?? "", attemptID: r.text(5) ?? "", form: r.text(6),
            formVersion: r.optionalInt(7).map(Int.init), payload: r.blob(8), basePayload: r.blob(9), baseVersion: r.text(10),
            produces: r.optionalInt(11), serverID: r.optionalInt(12), serverVersion: r.text(13), filePath: r.text(14),
            contentType: r.text(15), byteCount: r.optionalInt(16), sha256: r.blob(17),
            state: State(rawValue: r.text(18) ?? "") ?? .pending, attempts: Int(r.int(19)), nextAttemptAt: r.int(20),
            leaseExpiresAt: r.optionalInt(21), lastError: r.text(22), fieldErrors: r.blob(23), serverPayload: r.blob(24),
            conflicts: r.blob(25), endpoint: r.text(26))
    }

    func item(_ id: Int64) throws -> Row? {
        try db.query("SELECT \(Self.columns) FROM items WHERE id = ?", [.integer(id)], Self.row).first
    }

    func items(workspace: String, states: [State]) throws -> [Row] {
        let marks = states.map { _ in "?" }.joined(separator: ", ")
        return try db.query(
            "SELECT \(Self.columns) FROM items WHERE workspace = ? AND state IN (\(marks)) ORDER BY id",
            [.text(workspace)] + states.map { .text($0.rawValue) }, Self.row)
    }

    func insert(_ row: Row, now: Int64) throws -> Int64 {
        try db.run("""
            INSERT INTO items (kind, workspace, lane, document_id, attempt_id, form, form_version, payload, base_payload,
                base_version, produces, file_path, content_type, byte_count, sha256, state, next_attempt_at, created_at, updated_at,
                endpoint)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [
                .text(row.kind.rawValue), .text(row.workspace), .text(row.lane), .text(row.documentID), .text(row.attemptID),
                row.form.map(SQLValue.text) ?? .null, row.formVersion.map { .integer(Int64($0)) } ?? .null,
                row.payload.map(SQLValue.blob) ?? .null, row.basePayload.map(SQLValue.blob) ?? .null,
                row.baseVersion.map(SQLValue.text) ?? .null, row.produces.map(SQLValue.integer) ?? .null,
                row.filePath.map(SQLValue.text) ?? .null, row.contentType.map(SQLValue.text) ?? .null,
                row.byteCount.map(SQLValue.integer) ?? .null, row.sha256.map(SQLValue.blob) ?? .null,
                .text(row.state.rawValue), .integer(row.nextAttemptAt), .integer(now), .integer(now),
                row.endpoint.map(SQLValue.text) ?? .null,
            ])
        return db.lastInsertRowID
    }

    /// Writes back every mutable column of `row`.
    func update(_ row: Row, now: Int64) throws {
        try db.run("""
            UPDATE items SET attempt_id = ?, payload = ?, endpoint = ?, base_payload = ?, base_version = ?, server_id = ?, server_version = ?,
                state = ?, attempts = ?, next_attempt_at = ?, lease_expires_at = ?, last_error = ?, field_errors = ?,
                server_payload = ?, conflicts = ?, updated_at = ?
            WHERE id = ?
            """, [
                .text(row.attemptID), row.payload.map(SQLValue.blob) ?? .null, row.endpoint.map(SQLValue.text) ?? .null,
                row.basePayload.map(SQLValue.blob) ?? .null,
                row.baseVersion.map(SQLValue.text) ?? .null, row.serverID.map(SQLValue.integer) ?? .null,
                row.serverVersion.map(SQLValue.text) ?? .null, .text(row.state.rawValue), .integer(Int64(row.attempts)),
                .integer(row.nextAttemptAt), row.leaseExpiresAt.map(SQLValue.integer) ?? .null,
                row.lastError.map(SQLValue.text) ?? .null, row.fieldErrors.map(SQLValue.blob) ?? .null,
                row.serverPayload.map(SQLValue.blob) ?? .null, row.conflicts.map(SQLValue.blob) ?? .null,
                .integer(now), .integer(row.id),
            ])
    }

    func deleteConfirmed(workspace: String, before cutoff: Int64) throws -> Int {
        try db.run("DELETE FROM items WHERE workspace = ? AND state = 'confirmed' AND updated_at < ?", [.text(workspace), .integer(cutoff)])
    }

    func delete(_ id: Int64) throws {
        try db.run("DELETE FROM items WHERE id = ?", [.integer(id)])
    }

    // MARK: Dependencies

    func addDependency(item: Int64, placeholder: Int64) throws {
        try db.run("INSERT OR IGNORE INTO dependencies (item_id, placeholder) VALUES (?, ?)", [.integer(item), .integer(placeholder)])
    }

    func removeDependencies(item: Int64) throws {
        try db.run("DELETE FROM dependencies WHERE item_id = ?", [.integer(item)])
    }

    func dependencies(of item: Int64) throws -> [Int64] {
        try db.query("SELECT placeholder FROM dependencies WHERE item_id = ?", [.integer(item)]) { $0.int(0) }
    }

    func dependents(of placeholder: Int64) throws -> [Int64] {
        try db.query("SELECT item_id FROM dependencies WHERE placeholder = ? ORDER BY item_id", [.integer(placeholder)]) { $0.int(0) }
    }

    /// Server ids of this item's landed dependencies.
    func resolvedDependencies(of item: Int64) throws -> [Int64: Int64] {
        let pairs = try db.query("""
            SELECT d.placeholder, r.server_id FROM dependencies d JOIN resolved r ON r.placeholder = d.placeholder
            WHERE d.item_id = ?
            """, [.integer(item)]) { ($0.int(0), $0.int(1)) }
        return Dictionary(pairs, uniquingKeysWith: { a, _ in a })
    }

    func resolve(placeholder: Int64, serverID: Int64) throws {
        try db.run("INSERT OR REPLACE INTO resolved (placeholder, server_id) VALUES (?, ?)", [.integer(placeholder), .integer(serverID)])
    }

    func isResolved(_ placeholder: Int64) throws -> Bool {
        try !db.query("SELECT 1 FROM resolved WHERE placeholder = ?", [.integer(placeholder)]) { $0.int(0) }.isEmpty
    }

    /// The item that produces `placeholder`, with its state.
    func producer(of placeholder: Int64) throws -> (id: Int64, state: State)? {
        try db.query("SELECT id, state FROM items WHERE produces = ?", [.integer(placeholder)]) {
            ($0.int(0), State(rawValue: $0.text(1) ?? "") ?? .pending)
        }.first
    }

    /// The most negative placeholder this outbox has seen, so a restarted id source never repeats one.
    func mostNegativePlaceholder() throws -> Int64 {
        let values = try db.query("""
            SELECT MIN(m) FROM (SELECT MIN(produces) AS m FROM items UNION ALL SELECT MIN(placeholder) FROM dependencies
            UNION ALL SELECT MIN(placeholder) FROM resolved)
            """) { $0.optionalInt(0) }
        return min(values.first.flatMap { $0 } ?? 0, 0)
    }

    // MARK: Lanes

    /// Recomputes a lane's head and when it is due: a leased head is due when its lease
    /// expires; a pending head waiting for dependencies is not due at all (NULL) until one lands.
    func refreshLane(workspace: String, lane: String) throws {
        let head = try db.query("""
            SELECT id, state, next_attempt_at, lease_expires_at FROM items
            WHERE workspace = ? AND lane = ? AND state IN ('pending', 'leased') ORDER BY id LIMIT 1
            """, [.text(workspace), .text(lane)]) { ($0.int(0), $0.text(1) ?? "", $0.int(2), $0.optionalInt(3)) }.first
        guard let (id, state, nextAttemptAt, leaseExpiresAt) = head else {
            try db.run("DELETE FROM lanes WHERE workspace = ? AND lane = ?", [.text(workspace), .text(lane)])
            return
        }
        var due: Int64?
        if state == State.leased.rawValue {
            due = leaseExpiresAt ?? nextAttemptAt
        } else if try waitsForDependencies(id) {
            due = nil
        } else {
            due = nextAttemptAt
        }
        try db.run("INSERT OR REPLACE INTO lanes (workspace, lane, head, due_at) VALUES (?, ?, ?, ?)",
                   [.text(workspace), .text(lane), .integer(id), due.map(SQLValue.integer) ?? .null])
    }

    func waitsForDependencies(_ item: Int64) throws -> Bool {
        try !db.query("""
            SELECT 1 FROM dependencies d WHERE d.item_id = ?
            AND NOT EXISTS (SELECT 1 FROM resolved r WHERE r.placeholder = d.placeholder) LIMIT 1
            """, [.integer(item)]) { $0.int(0) }.isEmpty
    }

    /// Lane heads due by `now`, earliest first.
    func dueLanes(workspace: String, now: Int64, limit: Int) throws -> [(lane: String, head: Int64)] {
        try db.query("""
            SELECT lane, head FROM lanes WHERE workspace = ? AND due_at IS NOT NULL AND due_at <= ?
            ORDER BY due_at, head LIMIT ?
            """, [.text(workspace), .integer(now), .integer(Int64(limit))]) { ($0.text(0) ?? "", $0.int(1)) }
    }

    /// Returns expired leases to pending (not an attempt); the attempt identity is kept.
    func reclaimExpiredLeases(now: Int64) throws -> [(workspace: String, lane: String)] {
        let lanes = try db.query("SELECT DISTINCT workspace, lane FROM items WHERE state = 'leased' AND lease_expires_at <= ?", [.integer(now)]) {
            ($0.text(0) ?? "", $0.text(1) ?? "")
        }
        try db.run("UPDATE items SET state = 'pending', lease_expires_at = NULL, updated_at = ? WHERE state = 'leased' AND lease_expires_at <= ?",
                   [.integer(now), .integer(now)])
        return lanes
    }

    /// Item counts per workspace and state, read once when the outbox opens.
    func counts() throws -> [String: [State: Int]] {
        var result: [String: [State: Int]] = [:]
        for (workspace, state, count) in try db.query("SELECT workspace, state, COUNT(*) FROM items GROUP BY workspace, state", [], {
            ($0.text(0) ?? "", State(rawValue: $0.text(1) ?? "") ?? .pending, Int($0.int(2)))
        }) {
            result[workspace, default: [:]][state] = count
        }
        return result
    }
}
