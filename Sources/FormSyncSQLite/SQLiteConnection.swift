import CSQLite
import Foundation
import Synchronization

/// A failed SQLite call: the extended result code, SQLite's message and the statement that
/// failed. Bound values are never included, so a payload cannot leak into a log.
package struct SQLiteError: Error, CustomStringConvertible, Sendable, Equatable {
    /// SQLite's extended result code (for example 1555, SQLITE_CONSTRAINT_PRIMARYKEY).
    package var code: Int32
    package var message: String
    /// The SQL text that failed, without its bound values.
    package var sql: String

    package var description: String { "SQLite error \(code): \(message) (in: \(sql))" }

    /// Whether the file is not a SQLite database, or a damaged one.
    package var isNotADatabase: Bool { code & 0xff == SQLITE_NOTADB || code & 0xff == SQLITE_CORRUPT }
    /// Whether another connection held the database past the busy timeout.
    package var isBusy: Bool { code & 0xff == SQLITE_BUSY || code & 0xff == SQLITE_LOCKED }
}

/// A value bound to or read from a statement.
package enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
}

/// How hard a commit works to survive power loss.
///
/// In WAL mode, `synchronous=FULL` fsyncs the log on every commit, so a commit that returned is
/// on disk; `NORMAL` leaves the fsync to the next checkpoint, so the last commits can vanish on
/// power loss (never corrupt the file). FormSync uses `full` for every commit that a person was
/// told about or acted on — resubmit, retry, discard, conflict resolution — except enqueue
/// ("saved") and the reference server's writes, which commit `normal` and then wait for a shared
/// fsync of the log (`WALSync`, a group commit) before anyone is told; and `normal` alone for
/// the transitions whose loss is harmless because they are replayed: a lost
/// lease returns the item to pending, a lost acknowledgement or parking means the same attempt
/// is sent again and the server's idempotency ledger answers with the recorded result.
package enum Durability: Sendable {
    case full
    case normal
}

/// One SQLite connection: WAL mode (checked after setting it), a busy timeout, prepared
/// statements cached by SQL text, `BEGIN IMMEDIATE` transactions scoped to a closure. Not
/// thread-safe on its own: it is owned by one actor and used only from that actor's executor.
package final class SQLiteConnection {
    private let handle: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]
    /// Statements of `Statement`s, found by the object's identity instead of by hashing their
    /// text (a flushed item runs about ten, some of 400 characters).
    private var named: [ObjectIdentifier: (statement: Statement, prepared: OpaquePointer)] = [:]
    private var currentDurability: Durability?
    package let path: String
    /// Told the durability of every transaction that committed (tests watch the order of
    /// commits and side effects with it).
    package var commitObserver: ((Durability) -> Void)?
    private let commits = CommitCounter()
    /// How many transactions this connection committed (explicit and autocommit): a commit's
    /// number, read right after it returned, is what `WALSync` is asked to make durable.
    /// Safe to read from any thread. A number is published only once its statement has finished
    /// (its frames are in the log), and a thread that saw a commit's data, under whatever lock
    /// guards the connection, reads a number at least as high as that commit's.
    package var commitCount: UInt64 { commits.published.load(ordering: .acquiring) }

    /// Opens `path`; with `create` false a missing file is an error instead of a new database.
    /// With `backgroundCheckpointFrames`, the log is copied back into the database by a second
    /// connection on a thread of its own once it holds that many frames (`WALCheckpointer`),
    /// instead of inside the commit that fills it (SQLite's automatic checkpoint, at 1,000).
    /// `extraOpenFlags` are passed to `sqlite3_open_v2` as well (Apple's data-protection flags).
    package convenience init(
        path: String, create: Bool = true, busyTimeoutMilliseconds: Int32 = 5000, backgroundCheckpointFrames: Int? = nil,
        extraOpenFlags: Int32 = 0
    ) throws {
        try self.init(
            path: path, readOnly: false, create: create, busyTimeoutMilliseconds: busyTimeoutMilliseconds,
            backgroundCheckpointFrames: backgroundCheckpointFrames,
            extraOpenFlags: extraOpenFlags)
    }

    /// Opens `path` for reading only (`SQLITE_OPEN_READONLY`, `query_only`): no journal-mode
    /// change, no checkpoint, nothing written to the database file.
    package convenience init(readingOnly path: String) throws {
        try self.init(
            path: path, readOnly: true, create: false, busyTimeoutMilliseconds: 5000, backgroundCheckpointFrames: nil, extraOpenFlags: 0)
    }

    private init(
        path: String, readOnly: Bool, create: Bool, busyTimeoutMilliseconds: Int32, backgroundCheckpointFrames: Int?, extraOpenFlags: Int32
    ) throws {
        Self.configureProcess()
        var db: OpaquePointer?
        let flags =
            (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)) | SQLITE_OPEN_NOMUTEX
            | extraOpenFlags
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc, message: message, sql: "open \(path)")
        }
        handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        sqlite3_commit_hook(
            db,
            { context in
                Unmanaged<CommitCounter>.fromOpaque(context!).takeUnretainedValue().begun &+= 1
                return 0
            }, Unmanaged.passUnretained(commits).toOpaque())
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        if readOnly {
            try execute("PRAGMA query_only=1")
            return
        }
        let mode = try query("PRAGMA journal_mode=WAL") { $0.text(0) }.first ?? nil
        guard mode?.lowercased() == "wal" else {
            throw SQLiteError(
                code: SQLITE_ERROR, message: "WAL mode could not be enabled (journal_mode is \(mode ?? "unknown"))",
                sql: "PRAGMA journal_mode=WAL")
        }
        #if canImport(Darwin)
            // SQLite's own syncs (commits at FULL, checkpoints) through the drive's cache too.
            try execute("PRAGMA fullfsync=ON")
            try execute("PRAGMA checkpoint_fullfsync=ON")
        #elseif canImport(Glibc) || canImport(Musl)
            // fsync already writes through the drive's cache.
        #endif
        try execute("PRAGMA foreign_keys=ON")
        try execute("PRAGMA cache_size=-16384")
        try setDurability(.full)
        if let frames = backgroundCheckpointFrames {
            let checkpointer = WALCheckpointer(path: path, threshold: frames)
            self.checkpointer = checkpointer
            // Replaces SQLite's automatic checkpoint (itself a log hook) on this connection.
            sqlite3_wal_hook(
                db,
                { context, writer, _, frames in
                    Unmanaged<WALCheckpointer>.fromOpaque(context!).takeUnretainedValue().committed(frames: frames, writer: writer!)
                    return SQLITE_OK
                }, Unmanaged.passUnretained(checkpointer).toOpaque())
        }
    }

    /// Makes SQLite's process-wide settings, once, before the first connection opens: no memory
    /// statistics (they serialise every allocation and free of every connection through one
    /// mutex, 3–4 % of a flush's CPU). They stay as they are when something else in the process
    /// started SQLite first; a program that also opens SQLite itself calls this first.
    package static func configureProcess() { _ = configured }

    private static let configured: Bool = formsync_sqlite3_disable_memstatus() == SQLITE_OK

    /// Whether SQLite counts the memory it holds in this process (it does not once
    /// `configureProcess` ran first).
    package static var keepsMemoryStatistics: Bool {
        var current: Int64 = 0
        var highest: Int64 = 0
        sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &current, &highest, 0)
        return current != 0
    }

    /// The log's checkpointer, when checkpoints run in the background.
    package private(set) var checkpointer: WALCheckpointer?

    deinit {
        checkpointer?.close()
        for statement in statements.values { sqlite3_finalize(statement) }
        for entry in named.values { sqlite3_finalize(entry.prepared) }
        sqlite3_close_v2(handle)
    }

    private func error(_ rc: Int32, _ sql: String) -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    /// Runs SQL with no result rows (one or several statements, no parameters).
    package func execute(_ sql: String) throws {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        commits.publish()
        guard rc == SQLITE_OK else { throw error(rc, sql) }
    }

    /// The cached statement for `sql`, reset; its parameters keep their last values until
    /// `bind` sets them (every one, or clears them all first).
    private func prepared(_ sql: String) throws -> OpaquePointer {
        if let statement = statements[sql] {
            sqlite3_reset(statement)
            return statement
        }
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw error(rc, sql) }
        statements[sql] = statement
        return statement
    }

    /// A statement declared once (a `static let`) and run often: the connection prepares it on
    /// first use and finds it again by identity. Its text must not depend on the values it is
    /// run with; those are bound.
    package final class Statement: Sendable {
        package let sql: String
        package init(_ sql: String) { self.sql = sql }
    }

    private func prepared(_ statement: Statement) throws -> OpaquePointer {
        if let entry = named[ObjectIdentifier(statement)] { return entry.prepared }
        var prepared: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, statement.sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
        guard rc == SQLITE_OK, let prepared else { throw error(rc, statement.sql) }
        // The entry keeps the object alive, so its identity is never another statement's.
        named[ObjectIdentifier(statement)] = (statement, prepared)
        return prepared
    }

    private func bind(_ values: [SQLValue], to statement: OpaquePointer, sql: String) throws {
        // A parameter given no value is NULL, not what an earlier run left in it.
        if values.count < sqlite3_bind_parameter_count(statement) { sqlite3_clear_bindings(statement) }
        var binder = Binder(statement: statement)
        for (offset, value) in values.enumerated() { binder.value(Int32(offset + 1), value) }
        guard binder.failure == SQLITE_OK else { throw error(binder.failure, sql) }
    }

    /// Runs one statement that returns no rows; returns the number of rows it changed.
    @discardableResult
    package func run(_ sql: String, _ values: [SQLValue] = []) throws -> Int {
        try run(prepared(sql), sql: sql, values)
    }

    /// `run` for a declared statement.
    @discardableResult
    package func run(_ statement: Statement, _ values: [SQLValue] = []) throws -> Int {
        try run(prepared(statement), sql: statement.sql, values)
    }

    /// Binds one run's values straight into a prepared statement, without an array of them:
    /// for a statement run once per row of a large batch (a pull's records).
    package struct Binder: ~Copyable {
        let statement: OpaquePointer
        private(set) var failure: Int32 = SQLITE_OK

        fileprivate init(statement: OpaquePointer) { self.statement = statement }

        private mutating func check(_ rc: Int32) { if rc != SQLITE_OK, failure == SQLITE_OK { failure = rc } }

        package mutating func integer(_ index: Int32, _ value: Int64) { check(sqlite3_bind_int64(statement, index, value)) }

        mutating func value(_ index: Int32, _ value: SQLValue) {
            switch value {
            case .null: check(sqlite3_bind_null(statement, index))
            case .integer(let v): integer(index, v)
            case .real(let v): check(sqlite3_bind_double(statement, index, v))
            case .text(let v): text(index, v)
            case .blob(let v): blob(index, v)
            }
        }

        package mutating func text(_ index: Int32, _ value: String?) {
            guard var value else { return check(sqlite3_bind_null(statement, index)) }
            let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
            check(value.withUTF8 { sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count), transient) })
        }

        package mutating func blob(_ index: Int32, _ value: Data) {
            let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
            check(
                value.withUnsafeBytes { raw in
                    sqlite3_bind_blob(statement, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count), transient)
                })
        }
    }

    /// `run` for a declared statement whose values `bind` sets (every parameter it leaves
    /// unset is NULL); returns the number of rows it changed.
    @discardableResult
    package func run(_ statement: Statement, binding bind: (inout Binder) -> Void) throws -> Int {
        let prepared = try prepared(statement)
        return try step(prepared, sql: statement.sql) {
            sqlite3_clear_bindings(prepared)
            var binder = Binder(statement: prepared)
            bind(&binder)
            guard binder.failure == SQLITE_OK else { throw error(binder.failure, statement.sql) }
        }
    }

    private func run(_ statement: OpaquePointer, sql: String, _ values: [SQLValue]) throws -> Int {
        try step(statement, sql: sql) { try bind(values, to: statement, sql: sql) }
    }

    /// Binds with `bind`, runs the statement to its end and resets it: the rows it changed.
    private func step(_ statement: OpaquePointer, sql: String, bind: () throws -> Void) throws -> Int {
        defer {
            sqlite3_reset(statement)
            commits.publish()
        }
        try bind()
        let rc = sqlite3_step(statement)
        guard rc == SQLITE_DONE || rc == SQLITE_ROW else { throw error(rc, sql) }
        return Int(sqlite3_changes(handle))
    }

    /// Runs one statement and maps each row.
    package func query<T>(_ sql: String, _ values: [SQLValue] = [], _ map: (Row) throws -> T) throws -> [T] {
        try query(prepared(sql), sql: sql, values, map)
    }

    /// `query` for a declared statement.
    package func query<T>(_ statement: Statement, _ values: [SQLValue] = [], _ map: (Row) throws -> T) throws -> [T] {
        try query(prepared(statement), sql: statement.sql, values, map)
    }

    private func query<T>(_ statement: OpaquePointer, sql: String, _ values: [SQLValue], _ map: (Row) throws -> T) throws -> [T] {
        defer {
            sqlite3_reset(statement)
            commits.publish()
        }
        try bind(values, to: statement, sql: sql)
        var rows: [T] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(rc, sql) }
            rows.append(try map(Row(statement: statement)))
        }
        return rows
    }

    package var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Whether a transaction is open (false after SQLite rolled one back on its own, as it may
    /// after a full disk or an I/O error).
    package var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    package func setDurability(_ durability: Durability) throws {
        guard durability != currentDurability else { return }
        try execute(durability == .full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL")
        currentDurability = durability
    }

    private static let begin = Statement("BEGIN IMMEDIATE")
    private static let commit = Statement("COMMIT")
    private static let savepointBegin = Statement("SAVEPOINT formsync_part")
    private static let savepointRelease = Statement("RELEASE formsync_part")
    private static let savepointRollback = Statement("ROLLBACK TO formsync_part")

    /// Runs `body` in a savepoint of the open transaction, so that several writers' work can
    /// share one commit. When `body` throws, its changes alone are undone, the transaction goes
    /// on, and its error is returned. This throws only when the savepoint could not be set,
    /// released or undone (SQLite may have ended the transaction itself, as after a full disk):
    /// the transaction must then be abandoned.
    package func savepoint<T>(_ body: () throws -> T) throws -> Result<T, any Error> {
        try run(Self.savepointBegin)
        let value: T
        do {
            value = try body()
        } catch {
            guard inTransaction else { throw error }
            try run(Self.savepointRollback)
            try run(Self.savepointRelease)
            return .failure(error)
        }
        try run(Self.savepointRelease)
        return .success(value)
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction committed at `durability`; rolls back and
    /// rethrows when `body` or the commit throws.
    package func transaction<T>(_ durability: Durability, _ body: () throws -> T) throws -> T {
        try setDurability(durability)
        try run(Self.begin)
        do {
            let result = try body()
            try run(Self.commit)
            commitObserver?(durability)
            return result
        } catch {
            _ = try? run("ROLLBACK")
            throw error
        }
    }

    /// A result row, valid only inside the mapping closure.
    package struct Row {
        let statement: OpaquePointer

        package func isNull(_ i: Int32) -> Bool { sqlite3_column_type(statement, i) == SQLITE_NULL }
        package func int(_ i: Int32) -> Int64 { sqlite3_column_int64(statement, i) }
        package func optionalInt(_ i: Int32) -> Int64? { isNull(i) ? nil : int(i) }
        package func text(_ i: Int32) -> String? {
            guard let c = sqlite3_column_text(statement, i) else { return nil }
            return String(decoding: UnsafeBufferPointer(start: c, count: Int(sqlite3_column_bytes(statement, i))), as: UTF8.self)
        }
        package func blob(_ i: Int32) -> Data? {
            guard !isNull(i) else { return nil }
            let count = Int(sqlite3_column_bytes(statement, i))
            guard count > 0, let bytes = sqlite3_column_blob(statement, i) else { return Data() }
            return Data(bytes: bytes, count: count)
        }
    }
}

/// The commit hook's counter. The hook runs before the commit writes its frames, so its count
/// (`begun`, the connection's thread only) is published once the statement has finished; any
/// thread may read the published one (the reference server's handlers read it outside its lock).
private final class CommitCounter: @unchecked Sendable {
    var begun: UInt64 = 0
    let published = Atomic<UInt64>(0)

    func publish() {
        if published.load(ordering: .relaxed) != begun { published.store(begun, ordering: .releasing) }
    }
}

/// Versioned schema migrations, each applied once in its own transaction and recorded in the
/// database's `migrations` table with its version and name.
package struct SQLiteMigrator {
    package struct Migration {
        package var version: Int
        package var name: String
        package var sql: String

        package init(version: Int, name: String, sql: String) {
            self.version = version
            self.name = name
            self.sql = sql
        }
    }

    package var migrations: [Migration]

    package init(migrations: [Migration]) {
        self.migrations = migrations
    }

    /// The newest schema version these migrations produce.
    package var latestVersion: Int { migrations.map(\.version).max() ?? 0 }

    /// Applies what is missing, all in one immediate transaction, so that several processes
    /// opening the same new file at once serialise on SQLite's lock (with its busy timeout) and
    /// each sees the others' work. A database already past `latestVersion` is refused: it was
    /// written by a newer build, and this one must not touch it. `before` runs first in the same
    /// transaction (for example to check or stamp the file's identity).
    package func migrate(_ db: SQLiteConnection, now: Int64, before: () throws -> Void = {}) throws {
        try db.transaction(.full) {
            try before()
            try db.execute(
                "CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)")
            let applied = Set(try db.query("SELECT version FROM migrations") { $0.int(0) })
            if let newest = applied.max(), newest > Int64(latestVersion) {
                throw SQLiteError(
                    code: SQLITE_ERROR, message: "the schema is version \(newest), newer than this build's \(latestVersion)",
                    sql: "SELECT version FROM migrations")
            }
            for migration in migrations.sorted(by: { $0.version < $1.version }) where !applied.contains(Int64(migration.version)) {
                try db.execute(migration.sql)
                try db.run(
                    "INSERT INTO migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    [.integer(Int64(migration.version)), .text(migration.name), .integer(now)])
            }
        }
    }
}
