import FormSyncModel
import FormSyncSQLite
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The outbox's tables and every query it runs. Each lookup the scheduler makes goes through an
/// index keyed by lane or by id, so one step costs the same whatever the queue's length:
/// `lanes` holds one row per lane with work, naming its head item and when that head is due.
final class OutboxStore {
    let db: SQLiteConnection
    /// Whether any item has an owner (`item_owners`, a shared phone): until one has, the hot
    /// reads of the writer (an item by id, a lane's head) skip the owner lookup. Only ever set,
    /// on the writer's own store, by `setOwner`; a reader's store keeps `true` and always looks.
    var ownersExist = true

    /// Stored states. `pending` and `leased` are open (in the lane); the rest are not.
    enum State: String {
        case pending, leased, confirmed, rejected, conflict, exhausted, blocked
        /// Kept for support: the device was revoked before it went out (`Outbox.deviceRevoked`).
        case sealed

        /// Whether the item is still in its lane (`items_open`).
        var isOpen: Bool { self == .pending || self == .leased }
    }

    /// The `outbox_counters` row that holds the largest item id ever given out, written only
    /// when items are deleted: without `AUTOINCREMENT`, SQLite would hand the id of a deleted
    /// newest item out again, and an app (or the `documents` ledger) still holding it would
    /// then name another item.
    static let lastItemIDCounter = "items"

    /// `PRAGMA application_id` of every outbox file ("FSOX"): a file without it is not ours.
    static let applicationID: Int64 = 0x4653_4F58

    /// Opens the outbox at `path`, creating it when there is none. A new file is built complete
    /// under a private name and linked into place, so no process ever sees a half-made outbox
    /// and concurrent first opens all succeed. An existing file must carry the outbox's
    /// application id and a schema this build knows; anything else (empty, truncated, another
    /// program's database, a newer schema) is refused and left untouched.
    init(path: String, now: Int64, openFlags: Int32 = 0) throws {
        if access(path, F_OK) != 0 { try Self.create(path: path, now: now) }
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw OutboxError.notAnOutbox(path: path, reason: "it cannot be read: \(String(cString: strerror(errno)))")
        }
        guard info.st_size > 0 else { throw OutboxError.notAnOutbox(path: path, reason: "the file is empty") }
        for suffix in ["", "-wal", "-shm"] { chmod(path + suffix, 0o600) }
        do {
            db = try SQLiteConnection(path: path, create: false, backgroundCheckpointFrames: 1000, extraOpenFlags: openFlags)
            try OutboxMigrations.all.migrate(db, now: now) { [db] in try Self.checkIdentity(db, path: path) }
            ownersExist = try !db.query("SELECT 1 FROM item_owners LIMIT 1") { $0.int(0) }.isEmpty
        } catch let error as SQLiteError {
            if error.message.contains("newer than this build") {
                throw OutboxError.notAnOutbox(
                    path: path, reason: "it was written by a newer FormSync (\(error.message)); this build will not touch it")
            }
            if error.isNotADatabase {
                throw OutboxError.notAnOutbox(path: path, reason: "it is not a readable SQLite database (\(error.message))")
            }
            throw OutboxDatabase.mapped(error)
        }
    }

    /// A store over a connection already open (the read-only copy `OutboxInspector` reads).
    init(reading db: SQLiteConnection) {
        self.db = db
    }

    /// Accepts a file stamped as an outbox, or one made by the first FormSync build (no stamp,
    /// but its `migrations` table records the outbox schema), which it stamps.
    private static func checkIdentity(_ db: SQLiteConnection, path: String) throws {
        let id = try db.query("PRAGMA application_id") { $0.int(0) }.first ?? 0
        if id == applicationID { return }
        let legacy = id == 0 && (try? db.query("SELECT name FROM migrations WHERE version = 1") { $0.text(0) }.first) == "outbox"
        guard legacy else {
            throw OutboxError.notAnOutbox(
                path: path, reason: id == 0 ? "it is another program's SQLite database" : "its application id is \(id), not FormSync's")
        }
        try db.execute("PRAGMA application_id = \(applicationID)")
    }

    /// Builds a new outbox under a private name (owner-only), then links it to `path`; when
    /// another process got there first, its file stands and this one is dropped.
    private static func create(path: String, now: Int64) throws {
        let temporary = "\(path).creating-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer {
            for suffix in ["", "-wal", "-shm", "-journal"] { unlink(temporary + suffix) }
        }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw OutboxError.notAnOutbox(path: path, reason: "cannot create it: \(String(cString: strerror(errno)))") }
        close(fd)
        func build() throws {
            let db = try SQLiteConnection(path: temporary, create: false)
            try db.execute("PRAGMA application_id = \(applicationID)")
            try OutboxMigrations.all.migrate(db, now: now)
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        do {
            try build()
        } catch let error as SQLiteError {
            throw OutboxDatabase.mapped(error)
        }
        let folder = open(
            (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent, O_RDONLY)
        let linked = link(temporary, path)
        let reason = errno
        if folder >= 0 {
            _ = DurableSync.full(folder)
            close(folder)
        }
        guard linked == 0 || reason == EEXIST else {
            throw OutboxError.notAnOutbox(path: path, reason: "cannot create it: \(String(cString: strerror(reason)))")
        }
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
        /// How many times the item went on the wire, whatever came back (0: never left the device).
        var sends: Int
        /// The person who captured it (or was handed it) on a shared phone; nil when nobody was
        /// signed in.
        var principal: String? = nil
        /// When it was captured (enqueued), by the outbox's clock; 0 for a row not yet inserted.
        var createdAt: Int64 = 0
        /// For a conflict: who made the server's version it met (`ChangeAuthor` JSON).
        var lastChange: Data? = nil

        /// A new pending item, due `now`, not yet inserted (`id` 0).
        static func new(
            kind: OutboxItem.Kind, workspace: String, lane: String, documentID: String, attemptID: String, now: Int64, produces: Int64?
        ) -> Row {
            Row(
                id: 0, kind: kind, workspace: workspace, lane: lane, documentID: documentID, attemptID: attemptID,
                form: nil, formVersion: nil, payload: nil, basePayload: nil, baseVersion: nil, produces: produces, serverID: nil,
                serverVersion: nil, filePath: nil, contentType: nil, byteCount: nil, sha256: nil, state: .pending, attempts: 0,
                nextAttemptAt: now, leaseExpiresAt: nil, lastError: nil, fieldErrors: nil, serverPayload: nil, conflicts: nil,
                endpoint: nil, sends: 0)
        }
    }

    static let columns = """
        id, kind, workspace, lane, document_id, attempt_id, form, form_version, payload, base_payload, base_version,
        produces, server_id, server_version, file_path, content_type, byte_count, sha256, state, attempts,
        next_attempt_at, lease_expires_at, last_error, field_errors, server_payload, conflicts, endpoint, sends, created_at,
        last_change, \(ownerColumn)
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
            conflicts: r.blob(25), endpoint: r.text(26), sends: Int(r.int(27)), principal: r.text(30), createdAt: r.int(28),
            lastChange: r.blob(29))
    }

    func item(_ id: Int64) throws -> Row? {
        try db.query(ownersExist ? Self.itemQuery : Self.itemQueryWithoutOwners, [.integer(id)], Self.row).first
    }

    static let itemQuery = SQLiteConnection.Statement("SELECT \(columns) FROM items WHERE id = ?")
    /// `itemQuery` where no item has an owner: the same columns, the owner a constant NULL.
    static let itemQueryWithoutOwners = SQLiteConnection.Statement(
        "SELECT \(columns.replacingOccurrences(of: ownerColumn, with: "NULL")) FROM items WHERE id = ?")
    /// The owner column of `columns`.
    static let ownerColumn = "(SELECT principal FROM item_owners WHERE item_owners.item_id = items.id)"

    /// Items of `workspace` in `states`, in enqueue order; only those `principal` owns when it is
    /// given (`.some(nil)`: those nobody owns).
    func items(workspace: String, states: [State], principal: String?? = nil) throws -> [Row] {
        // Open items are in `items_open`, the rest in `items_state`: one query per index, each
        // naming its index's condition so that SQLite can use it.
        var rows: [Row] = []
        for (condition, wanted) in [(Self.openCondition, states.filter(\.isOpen)), (Self.settledCondition, states.filter { !$0.isOpen })]
        where !wanted.isEmpty {
            let marks = wanted.map { _ in "?" }.joined(separator: ", ")
            rows += try db.query(
                "SELECT \(Self.columns) FROM items WHERE workspace = ? AND \(condition) AND state IN (\(marks)) ORDER BY id",
                [.text(workspace)] + wanted.map { .text($0.rawValue) }, Self.row)
        }
        if case .some(let principal) = principal { rows.removeAll { $0.principal != principal } }
        return rows.count > 1 ? rows.sorted { $0.id < $1.id } : rows
    }

    /// The condition of `items_open`, word for word as a query must state it to use the index.
    static let openCondition = "state IN ('pending', 'leased')"
    /// The condition of `items_state` (every item that is not open), likewise.
    static let settledCondition = "state NOT IN ('pending', 'leased')"

    /// Inserts an item under the next id never given out: past the newest stored item and past
    /// every deleted one (`lastItemIDCounter`).
    func insert(_ row: Row, now: Int64) throws -> Int64 {
        try db.run(
            Self.insertStatement,
            [
                .text(row.kind.rawValue), .text(row.workspace), .text(row.lane), .text(row.documentID), .text(row.attemptID),
                row.form.map(SQLValue.text) ?? .null, row.formVersion.map { .integer(Int64($0)) } ?? .null,
                row.payload.map(SQLValue.blob) ?? .null, row.basePayload.map(SQLValue.blob) ?? .null,
                row.baseVersion.map(SQLValue.text) ?? .null, row.produces.map(SQLValue.integer) ?? .null,
                row.filePath.map(SQLValue.text) ?? .null, row.contentType.map(SQLValue.text) ?? .null,
                row.byteCount.map(SQLValue.integer) ?? .null, row.sha256.map(SQLValue.blob) ?? .null,
                .text(row.state.rawValue), .integer(row.nextAttemptAt), .integer(now), .integer(now),
                row.endpoint.map(SQLValue.text) ?? .null, row.lastError.map(SQLValue.text) ?? .null,
            ])
        let id = db.lastInsertRowID
        if let principal = row.principal { try setOwner(item: id, principal: principal) }
        return id
    }

    static let insertStatement = SQLiteConnection.Statement(
        """
        INSERT INTO items (id, kind, workspace, lane, document_id, attempt_id, form, form_version, payload, base_payload,
            base_version, produces, file_path, content_type, byte_count, sha256, state, next_attempt_at, created_at, updated_at,
            endpoint, last_error)
        VALUES (
            MAX(COALESCE((SELECT MAX(id) FROM items), 0), COALESCE((SELECT value FROM outbox_counters WHERE name = '\(lastItemIDCounter)'), 0)) + 1,
            ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """)

    /// Writes back every mutable column of `row`.
    func update(_ row: Row, now: Int64) throws {
        try db.run(
            """
            UPDATE items SET attempt_id = ?, payload = ?, endpoint = ?, base_payload = ?, base_version = ?, server_id = ?, server_version = ?,
                state = ?, attempts = ?, next_attempt_at = ?, lease_expires_at = ?, last_error = ?, field_errors = ?,
                server_payload = ?, conflicts = ?, updated_at = ?, sends = ?, form_version = ?, last_change = ?
            WHERE id = ?
            """,
            [
                .text(row.attemptID), row.payload.map(SQLValue.blob) ?? .null, row.endpoint.map(SQLValue.text) ?? .null,
                row.basePayload.map(SQLValue.blob) ?? .null,
                row.baseVersion.map(SQLValue.text) ?? .null, row.serverID.map(SQLValue.integer) ?? .null,
                row.serverVersion.map(SQLValue.text) ?? .null, .text(row.state.rawValue), .integer(Int64(row.attempts)),
                .integer(row.nextAttemptAt), row.leaseExpiresAt.map(SQLValue.integer) ?? .null,
                row.lastError.map(SQLValue.text) ?? .null, row.fieldErrors.map(SQLValue.blob) ?? .null,
                row.serverPayload.map(SQLValue.blob) ?? .null, row.conflicts.map(SQLValue.blob) ?? .null,
                .integer(now), .integer(Int64(row.sends)), row.formVersion.map { SQLValue.integer(Int64($0)) } ?? .null,
                row.lastChange.map(SQLValue.blob) ?? .null, .integer(row.id),
            ])
    }

    static let markConfirmedStatement = SQLiteConnection.Statement(
        """
        UPDATE items SET state = 'confirmed', attempts = ?, server_id = ?, server_version = ?, lease_expires_at = ?, last_error = ?, updated_at = ?
        WHERE id = ?
        """)

    /// Writes a confirmation: the columns an acknowledgement changes (`update` would also
    /// write the payloads back, unchanged).
    func markConfirmed(_ row: Row, now: Int64) throws {
        try db.run(
            Self.markConfirmedStatement,
            [
                .integer(Int64(row.attempts)), row.serverID.map(SQLValue.integer) ?? .null, row.serverVersion.map(SQLValue.text) ?? .null,
                row.leaseExpiresAt.map(SQLValue.integer) ?? .null, row.lastError.map(SQLValue.text) ?? .null, .integer(now),
                .integer(row.id),
            ])
    }

    static let markLeasedStatement = SQLiteConnection.Statement(
        "UPDATE items SET state = 'leased', lease_expires_at = ?, sends = ?, updated_at = ? WHERE id = ?")

    /// Writes a lease: the item's state, lease expiry and send count (the rest is unchanged).
    func markLeased(_ id: Int64, until expiry: Int64, sends: Int, now: Int64) throws {
        try db.run(Self.markLeasedStatement, [.integer(expiry), .integer(Int64(sends)), .integer(now), .integer(id)])
    }

    static let setLaneDueStatement = SQLiteConnection.Statement("UPDATE lanes SET due_at = ? WHERE workspace = ? AND lane = ? AND head = ?")

    /// Sets when a lane whose head is `head` is due; false when the lane has another head.
    func setLaneDue(workspace: String, lane: String, head: Int64, due: Int64) throws -> Bool {
        try db.run(Self.setLaneDueStatement, [.integer(due), .text(workspace), .text(lane), .integer(head)]) == 1
    }

    func deleteConfirmed(workspace: String, before cutoff: Int64) throws -> Int {
        try rememberLastItemID()
        for table in ["attempts", "item_records"] {
            try db.run(
                """
                DELETE FROM \(table) WHERE item_id IN (
                    SELECT id FROM items WHERE workspace = ? AND \(Self.settledCondition) AND state = 'confirmed' AND updated_at < ?)
                """, [.text(workspace), .integer(cutoff)])
        }
        return try db.run(
            "DELETE FROM items WHERE workspace = ? AND \(Self.settledCondition) AND state = 'confirmed' AND updated_at < ?",
            [.text(workspace), .integer(cutoff)])
    }

    func delete(_ id: Int64) throws {
        try rememberLastItemID()
        try db.run("DELETE FROM items WHERE id = ?", [.integer(id)])
        try db.run("DELETE FROM item_records WHERE item_id = ?", [.integer(id)])
        try forgetAttempts(of: id)
    }

    /// Keeps the newest item's id before anything is deleted, so that it is never given out again.
    func rememberLastItemID() throws {
        try db.run(
            """
            INSERT INTO outbox_counters (name, value) SELECT '\(Self.lastItemIDCounter)', id FROM items WHERE true ORDER BY id DESC LIMIT 1
            ON CONFLICT (name) DO UPDATE SET value = MAX(value, excluded.value)
            """)
    }

    // MARK: Dependencies

    /// `deferrable`: the item may go before `placeholder`'s file lands (a deferred file).
    func addDependency(item: Int64, placeholder: Int64, deferrable: Bool = false) throws {
        try db.run(
            "INSERT OR IGNORE INTO dependencies (item_id, placeholder, may_defer) VALUES (?, ?, ?)",
            [.integer(item), .integer(placeholder), .integer(deferrable ? 1 : 0)])
    }

    /// The files attempt `attempt` of `item` names by digest: those it named so when it was
    /// sent before (the same request again), and, while the server takes deferred files, its
    /// deferrable dependencies that have not landed (recorded as named by this attempt).
    func deferredFiles(of item: Int64, attempt: String, workspace: String) throws -> [Int64: FileRef] {
        var files: [Int64: FileRef] = [:]
        for (placeholder, sha, count, type) in try db.query(
            """
            SELECT placeholder, sent_sha256, sent_byte_count, sent_content_type FROM dependencies WHERE item_id = ? AND sent_attempt = ?
            """, [.integer(item), .text(attempt)], { ($0.int(0), $0.blob(1), $0.int(2), $0.text(3)) })
        {
            guard let sha, sha.count == 32, let type else { continue }
            files[placeholder] = FileRef.pending(sha256: sha, byteCount: count, contentType: type)
        }
        guard defersFiles else { return files }
        let fresh = try db.query(
            """
            SELECT d.placeholder, i.sha256, i.byte_count, i.content_type FROM dependencies d
            JOIN items i ON i.produces = d.placeholder AND i.workspace = ?1 AND i.kind = 'file'
            WHERE d.item_id = ?2 AND d.may_defer = 1 AND (d.sent_attempt IS NULL OR d.sent_attempt != ?3)
            AND NOT EXISTS (SELECT 1 FROM resolved r WHERE r.workspace = ?1 AND r.placeholder = d.placeholder)
            """, [.text(workspace), .integer(item), .text(attempt)]
        ) { ($0.int(0), $0.blob(1), $0.int(2), $0.text(3)) }
        for (placeholder, sha, count, type) in fresh {
            guard let sha, sha.count == 32, let type else { continue }
            try db.run(
                """
                UPDATE dependencies SET sent_attempt = ?, sent_sha256 = ?, sent_byte_count = ?, sent_content_type = ? WHERE item_id = ? AND placeholder = ?
                """, [.text(attempt), .blob(sha), .integer(count), .text(type), .integer(item), .integer(placeholder)])
            files[placeholder] = FileRef.pending(sha256: sha, byteCount: count, contentType: type)
        }
        return files
    }

    /// Whether the server announced deferred files (`FormSync-Features: deferred-files`), as
    /// last learnt; kept in `outbox_counters` across launches.
    /// (Read from the file each time: another process may have learnt it.)
    var defersFiles: Bool {
        ((try? db.query(Self.defersFilesQuery) { $0.int(0) }.first) ?? 0) == 1
    }

    static let defersFilesQuery = SQLiteConnection.Statement("SELECT value FROM outbox_counters WHERE name = 'server_defers_files'")

    /// Records what the server said of deferred files; true when that changed.
    func setDefersFiles(_ value: Bool) throws -> Bool {
        guard value != defersFiles else { return false }
        try db.run(
            "INSERT INTO outbox_counters (name, value) VALUES ('server_defers_files', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            [.integer(value ? 1 : 0)])
        return true
    }

    /// The size above which files wait for an unmetered network; nil: none wait.
    var meteredFileLimit: Int64? {
        (try? db.query("SELECT value FROM outbox_counters WHERE name = 'metered_file_limit'") { $0.int(0) }.first) ?? nil
    }

    /// Sets what `meteredFileLimit` reads; true when that changed.
    func setMeteredFileLimit(_ limit: Int64?) throws -> Bool {
        guard limit != meteredFileLimit else { return false }
        if let limit {
            try db.run(
                "INSERT INTO outbox_counters (name, value) VALUES ('metered_file_limit', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                [.integer(limit)])
        } else {
            try db.run("DELETE FROM outbox_counters WHERE name = 'metered_file_limit'")
        }
        return true
    }

    /// The lanes of files.
    func fileLanes() throws -> [(workspace: String, lane: String)] {
        try db.query("SELECT workspace, lane FROM lanes WHERE lane LIKE 'file:%'") { ($0.text(0) ?? "", $0.text(1) ?? "") }
    }

    /// Lets a file go on any network.
    func allowAnyNetwork(_ item: Int64) throws {
        try db.run("INSERT OR IGNORE INTO any_network (item_id) VALUES (?)", [.integer(item)])
    }

    /// Whether a pending file of `workspace` waits for an unmetered network, by id; or how many do.
    func heldForUnmeteredNetwork(workspace: String, item: Int64? = nil) throws -> Int {
        guard let limit = meteredFileLimit else { return 0 }
        return Int(
            try db.query(
                """
                SELECT COUNT(*) FROM items WHERE workspace = ? AND kind = 'file' AND state = 'pending' AND byte_count > ? AND (? IS NULL OR id = ?)
                AND NOT EXISTS (SELECT 1 FROM any_network a WHERE a.item_id = items.id)
                """, [.text(workspace), .integer(limit), item.map(SQLValue.integer) ?? .null, item.map(SQLValue.integer) ?? .null]
            ) { $0.int(0) }.first ?? 0)
    }

    /// The lanes whose head waits for a dependency that has not landed.
    func lanesWaitingForDependencies() throws -> [(workspace: String, lane: String)] {
        try db.query("SELECT workspace, lane FROM lanes WHERE due_at IS NULL") { ($0.text(0) ?? "", $0.text(1) ?? "") }
    }

    /// Whether a lane's head waits for a file that may land after it.
    func anyHeadWaitsForDeferrableFile() throws -> Bool {
        try !db.query(
            """
            SELECT 1 FROM lanes l JOIN dependencies d ON d.item_id = l.head WHERE l.due_at IS NULL AND d.may_defer = 1 LIMIT 1
            """
        ) { $0.int(0) }.isEmpty
    }

    /// A stashed copy of these bytes that an open file item of `workspace` holds, if any.
    func stashedCopy(workspace: String, sha256: Data) throws -> String? {
        try db.query(
            """
            SELECT file_path FROM items WHERE workspace = ? AND sha256 = ? AND kind = 'file' AND file_path IS NOT NULL AND state != 'confirmed' LIMIT 1
            """, [.text(workspace), .blob(sha256)]
        ) { $0.text(0) }.first ?? nil
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

    /// Server ids of this item's landed dependencies (its own workspace's only).
    func resolvedDependencies(of item: Int64, workspace: String) throws -> [Int64: Int64] {
        let pairs = try db.query(
            """
            SELECT d.placeholder, r.server_id FROM dependencies d JOIN resolved r ON r.workspace = ? AND r.placeholder = d.placeholder
            WHERE d.item_id = ?
            """, [.text(workspace), .integer(item)]
        ) { ($0.int(0), $0.int(1)) }
        return Dictionary(pairs, uniquingKeysWith: { a, _ in a })
    }

    func resolve(placeholder: Int64, serverID: Int64, workspace: String) throws {
        try db.run(
            "INSERT OR REPLACE INTO resolved (workspace, placeholder, server_id) VALUES (?, ?, ?)",
            [.text(workspace), .integer(placeholder), .integer(serverID)])
    }

    func isResolved(_ placeholder: Int64, workspace: String) throws -> Bool {
        try !db.query("SELECT 1 FROM resolved WHERE workspace = ? AND placeholder = ?", [.text(workspace), .integer(placeholder)]) {
            $0.int(0)
        }.isEmpty
    }

    /// The item of `workspace` that produces `placeholder`, with its state.
    /// (A record an item of a submission's list creates is that submission's.)
    func producer(of placeholder: Int64, workspace: String) throws -> (id: Int64, state: State)? {
        try db.query(Self.producerQuery, [.integer(placeholder), .text(workspace)]) {
            ($0.int(0), State(rawValue: $0.text(1) ?? "") ?? .pending)
        }.first
    }

    static let producerQuery = SQLiteConnection.Statement(
        """
        SELECT id, state FROM items WHERE produces = ?1 AND workspace = ?2
        UNION ALL SELECT i.id, i.state FROM item_records r JOIN items i ON i.id = r.item_id WHERE r.placeholder = ?1 AND i.workspace = ?2
        LIMIT 1
        """)

    // MARK: Documents

    /// The item that holds this exact payload (by digest) of the document, even if purged since.
    func documentItem(workspace: String, documentID: String, digest: Data) throws -> Int64? {
        try db.query(Self.documentItemQuery, [.text(workspace), .text(documentID), .blob(digest)]) { $0.int(0) }.first
    }

    static let documentItemQuery = SQLiteConnection.Statement(
        "SELECT item_id FROM documents WHERE workspace = ? AND document_id = ? AND digest = ?")

    /// The document's most recent item, when it is still stored.
    func latestDocumentItem(workspace: String, documentID: String) throws -> Row? {
        guard
            let id = try db.query(
                "SELECT MAX(item_id) FROM documents WHERE workspace = ? AND document_id = ?",
                [.text(workspace), .text(documentID)], { $0.optionalInt(0) }
            ).first ?? nil
        else { return nil }
        return try item(id)
    }

    func recordDocument(workspace: String, documentID: String, digest: Data, item: Int64) throws {
        try db.run(Self.recordDocumentStatement, [.text(workspace), .text(documentID), .blob(digest), .integer(item)])
    }

    static let recordDocumentStatement = SQLiteConnection.Statement(
        "INSERT OR REPLACE INTO documents (workspace, document_id, digest, item_id) VALUES (?, ?, ?, ?)")

    func forgetDocumentDigests(item: Int64, workspace: String, documentID: String) throws {
        try db.run(
            "DELETE FROM documents WHERE workspace = ? AND document_id = ? AND item_id = ?",
            [.text(workspace), .text(documentID), .integer(item)])
    }

    /// Whether a stored item still references this stash file.
    func referencesFile(_ path: String) throws -> Bool {
        // A confirmed upload's copy is no longer needed: one left behind by a process killed
        // between the confirmation's commit and the unlink is swept like any other.
        // A draft's attachment is kept until its draft is submitted or discarded.
        try !db.query(
            """
            SELECT 1 FROM items WHERE file_path = ?1 AND state != 'confirmed'
            UNION ALL SELECT 1 FROM draft_files WHERE path = ?1 LIMIT 1
            """, [.text(path)]
        ) { $0.int(0) }.isEmpty
    }

    /// The most negative placeholder this outbox has seen, so a restarted id source never repeats one.
    func mostNegativePlaceholder() throws -> Int64 {
        let values = try db.query(
            """
            SELECT MIN(m) FROM (SELECT MIN(produces) AS m FROM items WHERE produces IS NOT NULL UNION ALL SELECT MIN(placeholder) FROM dependencies
            UNION ALL SELECT MIN(placeholder) FROM resolved UNION ALL SELECT MIN(placeholder) FROM draft_files
            UNION ALL SELECT MIN(placeholder) FROM item_records)
            """
        ) { $0.optionalInt(0) }
        return min(values.first.flatMap { $0 } ?? 0, 0)
    }

    // MARK: Lanes

    /// The lane of an entity, whatever id the payload knows it by. A record created offline is
    /// `Type:-9` until it lands as `Type:501`: the two are one entity, so an item naming either
    /// joins the one of the two lanes that still holds open items (at most one does), and is
    /// sent in capture order behind them.
    func entityLane(_ lane: String, workspace: String) throws -> String {
        guard let colon = lane.lastIndex(of: ":"), !lane.hasPrefix("file:"), !lane.hasPrefix("document:"),
            let id = Int64(lane[lane.index(after: colon)...]), id != 0
        else { return lane }
        let other = id < 0 ? try resolvedID(id, workspace: workspace) : try placeholder(resolvedTo: id, workspace: workspace)
        guard let other else { return lane }
        let alias = "\(lane[..<colon]):\(other)"
        return try hasOpenItems(workspace: workspace, lane: alias) ? alias : lane
    }

    /// Recomputes a lane's head and when it is due: a leased head is due when its lease
    /// expires; a pending head waiting for dependencies is not due at all (NULL) until one lands.
    func refreshLane(workspace: String, lane: String) throws {
        let head = try db.query(ownersExist ? Self.laneHeadQuery : Self.laneHeadQueryWithoutOwners, [.text(workspace), .text(lane)]) {
            ($0.int(0), $0.text(1) ?? "", $0.int(2), $0.optionalInt(3), $0.int(4) != 0)
        }.first
        guard let (id, state, nextAttemptAt, leaseExpiresAt, waits) = head else {
            try db.run(Self.deleteLaneStatement, [.text(workspace), .text(lane)])
            return
        }
        var due: Int64?
        if state == State.leased.rawValue {
            due = leaseExpiresAt ?? nextAttemptAt
        } else if waits {
            due = nil
        } else {
            due = nextAttemptAt
        }
        // An update where the lane has a row (REPLACE would delete and insert it, and its due
        // index entry, again).
        let values: [SQLValue] = [.integer(id), due.map(SQLValue.integer) ?? .null, .text(workspace), .text(lane)]
        if try db.run(Self.updateLaneStatement, values) == 0 {
            try db.run(Self.insertLaneStatement, values)
        }
    }

    /// The lane's head, with whether it waits for a dependency that has not landed.
    /// (A deferrable dependency does not hold the head while the server takes deferred files; a
    /// file above the metered limit waits, as for a dependency, unless a person sent it "now";
    /// an item whose owner is not signed in waits for them.)
    static let laneHeadQuery = SQLiteConnection.Statement(
        """
        SELECT id, state, next_attempt_at, lease_expires_at, EXISTS (
            SELECT 1 FROM dependencies d WHERE d.item_id = items.id
            AND NOT (d.may_defer = 1 AND COALESCE((SELECT value FROM outbox_counters WHERE name = 'server_defers_files'), 0) = 1)
            AND NOT EXISTS (SELECT 1 FROM resolved r WHERE r.workspace = ?1 AND r.placeholder = d.placeholder))
        OR (kind = 'file' AND byte_count > (SELECT value FROM outbox_counters WHERE name = 'metered_file_limit')
            AND NOT EXISTS (SELECT 1 FROM any_network a WHERE a.item_id = items.id))
        \(ownerWaits)
        FROM items WHERE workspace = ?1 AND lane = ?2 AND \(openCondition) ORDER BY id LIMIT 1
        """)
    /// The lane head's owner is not signed in.
    static let ownerWaits = """
        OR EXISTS (SELECT 1 FROM item_owners o WHERE o.item_id = items.id
            AND NOT EXISTS (SELECT 1 FROM people p WHERE p.principal = o.principal AND p.present = 1))
        """
    /// `laneHeadQuery` where no item has an owner.
    static let laneHeadQueryWithoutOwners = SQLiteConnection.Statement(laneHeadQuery.sql.replacingOccurrences(of: ownerWaits, with: ""))
    static let deleteLaneStatement = SQLiteConnection.Statement("DELETE FROM lanes WHERE workspace = ? AND lane = ?")
    static let updateLaneStatement = SQLiteConnection.Statement("UPDATE lanes SET head = ?, due_at = ? WHERE workspace = ? AND lane = ?")
    static let insertLaneStatement = SQLiteConnection.Statement("INSERT INTO lanes (head, due_at, workspace, lane) VALUES (?, ?, ?, ?)")

    static let addToLaneStatement = SQLiteConnection.Statement(
        "INSERT OR IGNORE INTO lanes (workspace, lane, head, due_at) VALUES (?, ?, ?, ?)")

    /// Adds a lane for a newly inserted open item when the lane has none; a lane that already
    /// has a head keeps it (the new item is behind it), so nothing is read or rewritten.
    func addToLane(workspace: String, lane: String, head: Int64, due: Int64?) throws {
        try db.run(Self.addToLaneStatement, [.text(workspace), .text(lane), .integer(head), due.map(SQLValue.integer) ?? .null])
    }

    /// Lane heads due by `now`, earliest first. A due time more than `horizon` ahead of `now`
    /// was set by a clock that has since jumped back: it counts as due, so no clock holds an item.
    func dueLanes(workspace: String, now: Int64, horizon: Int64, limit: Int, files: Bool? = nil) throws -> [(lane: String, head: Int64)] {
        // Two range scans of the due index (due now; due "beyond the horizon"), so that neither
        // reads the lanes waiting in between, however many there are; the second only when the
        // first did not fill the limit. File uploads have lanes of their own (`file:…`), so the
        // upload pool and the submission lanes can be filled apart.
        var lanes: [(lane: String, head: Int64)]
        if files == true {
            // File lanes by their key range (`+due_at` keeps the due index out of it): a scan of
            // the due index for the few file lanes read every due submission lane whenever the
            // submission pool was full (100,000 queued orders: 15× the per-item flush cost).
            lanes = try db.query(
                Self.dueFileLanesQuery, [.text(workspace), .integer(now), .integer(now.addingClamped(horizon)), .integer(Int64(limit))]
            ) { ($0.text(0) ?? "", $0.int(1)) }
            return lanes
        }
        let (dueNow, dueBeyond) =
            files == false ? (Self.dueSubmissionLanesQuery, Self.beyondSubmissionLanesQuery) : (Self.dueLanesQuery, Self.beyondLanesQuery)
        lanes = try db.query(dueNow, [.text(workspace), .integer(now), .integer(Int64(limit))]) { ($0.text(0) ?? "", $0.int(1)) }
        if lanes.count < limit {
            lanes += try db.query(
                dueBeyond, [.text(workspace), .integer(now.addingClamped(horizon)), .integer(Int64(limit - lanes.count))]
            ) { ($0.text(0) ?? "", $0.int(1)) }
        }
        return lanes
    }

    static let dueFileLanesQuery = SQLiteConnection.Statement(
        """
        SELECT lane, head FROM lanes WHERE workspace = ? AND lane >= 'file:' AND lane < 'file;' AND +due_at IS NOT NULL
        AND (+due_at <= ? OR +due_at > ?) ORDER BY due_at, head LIMIT ?
        """)
    static let dueLanesQuery = SQLiteConnection.Statement(
        "SELECT lane, head FROM lanes WHERE workspace = ? AND due_at IS NOT NULL AND due_at <= ? ORDER BY due_at, head LIMIT ?")
    static let beyondLanesQuery = SQLiteConnection.Statement(
        "SELECT lane, head FROM lanes WHERE workspace = ? AND due_at > ? ORDER BY due_at, head LIMIT ?")
    static let dueSubmissionLanesQuery = SQLiteConnection.Statement(
        "SELECT lane, head FROM lanes WHERE workspace = ? AND due_at IS NOT NULL AND due_at <= ? AND lane NOT LIKE 'file:%' ORDER BY due_at, head LIMIT ?"
    )
    static let beyondSubmissionLanesQuery = SQLiteConnection.Statement(
        "SELECT lane, head FROM lanes WHERE workspace = ? AND due_at > ? AND lane NOT LIKE 'file:%' ORDER BY due_at, head LIMIT ?")

    /// The earliest due time of `workspace`'s lanes (nil when nothing is due at any time).
    func earliestDue(workspace: String) throws -> Int64? {
        try db.query("SELECT MIN(due_at) FROM lanes WHERE workspace = ? AND due_at IS NOT NULL", [.text(workspace)]) { $0.optionalInt(0) }
            .first ?? nil
    }

    /// Returns expired leases to pending (not an attempt); the attempt identity is kept. A lease
    /// ending more than `horizon` after `now` is from a clock that jumped back: expired too.
    func reclaimExpiredLeases(now: Int64, horizon: Int64) throws -> [(workspace: String, lane: String)] {
        let limit = now.addingClamped(horizon)
        guard try !db.query("SELECT 1 FROM items WHERE state = 'leased' LIMIT 1", [], { $0.int(0) }).isEmpty else { return [] }
        let lanes = try db.query(
            """
            SELECT DISTINCT workspace, lane FROM items WHERE state = 'leased' AND (lease_expires_at <= ? OR lease_expires_at > ?)
            """, [.integer(now), .integer(limit)]
        ) { ($0.text(0) ?? "", $0.text(1) ?? "") }
        try db.run(
            """
            UPDATE items SET state = 'pending', lease_expires_at = NULL, updated_at = ?
            WHERE state = 'leased' AND (lease_expires_at <= ? OR lease_expires_at > ?)
            """, [.integer(now), .integer(now), .integer(limit)])
        return lanes
    }

    /// The queries that count items at open. Each is answered from an index alone and in the
    /// index's order: grouping the open items by state as well sorted all of them (100,000
    /// queued orders: 88 ms against 15 ms), so leased items, which are few, are counted apart.
    static let openCountQuery = "SELECT workspace, COUNT(*) FROM items WHERE \(openCondition) GROUP BY workspace"
    static let leasedCountQuery = "SELECT workspace, COUNT(*) FROM items WHERE state = 'leased' GROUP BY workspace"
    static let settledCountQuery = "SELECT workspace, state, COUNT(*) FROM items WHERE \(settledCondition) GROUP BY workspace, state"

    /// Item counts per view (`PersonalView.key`: the workspace, or the workspace and the person who
    /// owns the items) and state, read once when the outbox opens from the state indexes (never
    /// from the table, whose rows hold the payloads); owned items, few and only on shared
    /// phones, are then moved from their workspace's counts to their owner's.
    func counts() throws -> [String: [State: Int]] {
        var result: [String: [State: Int]] = [:]
        for (workspace, count) in try db.query(Self.openCountQuery, [], { ($0.text(0) ?? "", Int($0.int(1))) }) {
            result[workspace, default: [:]][.pending, default: 0] += count
        }
        for (workspace, count) in try db.query(Self.leasedCountQuery, [], { ($0.text(0) ?? "", Int($0.int(1))) }) {
            result[workspace, default: [:]][.leased, default: 0] += count
            result[workspace, default: [:]][.pending, default: 0] -= count
        }
        for (workspace, state, count) in try db.query(
            Self.settledCountQuery, [],
            {
                ($0.text(0) ?? "", State(rawValue: $0.text(1) ?? "") ?? .pending, Int($0.int(2)))
            })
        {
            result[workspace, default: [:]][state, default: 0] += count
        }
        let owned = try db.query(Self.ownedCountQuery, [], { ($0.text(0) ?? "", $0.text(1) ?? "", $0.text(2) ?? "", Int($0.int(3))) })
        for (workspace, principal, state, count) in owned {
            let state = State(rawValue: state) ?? .pending
            let view = PersonalView(workspace: workspace, principal: principal).key
            result[workspace, default: [:]][state, default: 0] -= count
            result[view, default: [:]][state, default: 0] += count
        }
        return result
    }

    static let ownedCountQuery =
        "SELECT i.workspace, o.principal, i.state, COUNT(*) FROM item_owners o JOIN items i ON i.id = o.item_id GROUP BY 1, 2, 3"
}
