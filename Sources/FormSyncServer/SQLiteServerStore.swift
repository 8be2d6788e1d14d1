import FormSyncModel
import FormSyncSQLite
import Foundation
import Synchronization

/// The embedded store, the default: the idempotency ledger (unique key), documents (unique
/// document identity), files (by digest, on disk), uploads, records and token grants in one
/// SQLite file, for one server process. Every unit of work holds its lock (`exclusive`);
/// writes share fsyncs (a group commit), and a reply waits for the fsync that covers it.
final class SQLiteServerStore: ServerStore, @unchecked Sendable {
    let db: SQLiteConnection
    let filesDirectory: String

    struct LedgerEntry {
        var hash: Data
        /// Nil while the request is still being processed.
        var response: RecordedReply?
    }

    static let migrations = SQLiteMigrator(migrations: [
        .init(
            version: 1, name: "server",
            sql: """
                CREATE TABLE ledger (
                    key TEXT PRIMARY KEY,
                    hash BLOB NOT NULL,
                    status INTEGER,
                    headers TEXT,
                    body BLOB,
                    created_at INTEGER NOT NULL
                );
                CREATE TABLE documents (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    document_id TEXT NOT NULL UNIQUE,
                    form TEXT NOT NULL,
                    form_version INTEGER NOT NULL,
                    version INTEGER NOT NULL,
                    payload BLOB NOT NULL,
                    applied_writes INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                CREATE TABLE files (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    document_id TEXT NOT NULL UNIQUE,
                    digest BLOB NOT NULL,
                    content_type TEXT,
                    byte_count INTEGER NOT NULL,
                    created_at INTEGER NOT NULL
                );
                CREATE TABLE tokens (token TEXT PRIMARY KEY, kind TEXT NOT NULL, expires_at INTEGER NOT NULL);
                """),
        .init(
            version: 2, name: "workspaces and principals",
            sql: """
                ALTER TABLE documents ADD COLUMN workspace TEXT NOT NULL DEFAULT '';
                ALTER TABLE files ADD COLUMN workspace TEXT NOT NULL DEFAULT '';
                ALTER TABLE tokens ADD COLUMN principal TEXT NOT NULL DEFAULT 'default';
                """),
        recordsMigration,
        uploadsMigration,
        grantsMigration,
        pendingFilesMigration,
        fileAccessMigration,
    ])

    /// The mode of every folder the server creates: its owner's alone.
    static var ownerOnlyFolder: [FileAttributeKey: Any] { [.posixPermissions: 0o700] }

    /// Makes commits durable in groups (see `transaction`).
    let walSync: WALSync
    /// Writes stored files and their names durably (tests replace it with a disk that refuses).
    var durableFiles = DurableFiles()

    /// One unit of work at a time: the connection, the open batch and the keys in flight.
    private let lock = NSLock()

    init(directory: String, now: Int64) throws {
        filesDirectory = (directory as NSString).appendingPathComponent("files")
        try FileManager.default.createDirectory(atPath: filesDirectory, withIntermediateDirectories: true, attributes: Self.ownerOnlyFolder)
        DurableFiles.sweepPartials(in: filesDirectory)
        let path = (directory as NSString).appendingPathComponent("server.sqlite")
        db = try SQLiteConnection(path: path)
        // Owner-only, whatever the umask: the database holds every workspace's documents. SQLite
        // gives a log or shared-memory file it creates later the database file's mode.
        for file in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        }
        walSync = WALSync(databasePath: path)
        try Self.migrations.migrate(db, now: now)
        // A key left "in flight" by a server that died never committed its work (the work and
        // its recorded reply commit together): forget it so the client's retry is processed.
        try db.run("DELETE FROM ledger WHERE status IS NULL")
        // A server killed between a commit and its fsync left that commit in the log, not on
        // disk; a retry would now find its recorded reply and be answered before any fsync.
        try walSync.syncLog()
        walSync.commitBeforeEachRound { [weak self] in
            guard let self else { return 0 }
            return self.exclusive {
                self.commitBatch()
                return self.committedNumber
            }
        }
    }

    var sharedAcrossNodes: Bool { false }

    /// SQLite's own database is a file of this process: it is down only when the disk is
    /// (which is no retry's business), or busy past its timeout.
    func isUnavailable(_ error: any Error) -> Bool {
        guard let error = error as? SQLiteError else { return false }
        return error.isBusy
    }

    func exclusive<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    func flush() {
        exclusive { commitBatch() }
    }

    var fsyncCount: Int { walSync.fsyncCount }
    var fsyncNanoseconds: UInt64 { walSync.fsyncNanoseconds }

    // MARK: Durability

    /// A write made now joins the open batch or opens the next one: no earlier number.
    func durabilityMark() -> UInt64 { committedNumber + 1 }

    func whenDurable(since mark: UInt64, _ complete: @escaping @Sendable (DurabilityFailure?) -> Void) {
        let gate = durabilityGate
        guard groupCommit else { return complete(nil) }
        walSync.whenDurable(through: gate) { [self] failure in
            if let failure {
                complete(.notDurable("\(failure)"))
            } else if mark <= gate, lostBatch(in: mark...gate) != nil {
                complete(.lost)
            } else {
                complete(nil)
            }
        }
    }

    /// Commits at `synchronous=NORMAL`: the server answers a request only after `walSync` made
    /// every commit before the answer durable (one fsync shared by the requests committing
    /// together: a group commit). A batch of writes still open is committed first.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        commitBatch()
        return try db.transaction(groupCommit ? .normal : .full, body)
    }

    // MARK: Write batches

    /// Runs a request's write in the open batch, in a savepoint of its own: the writes made
    /// between two fsyncs of the log share one transaction, which the next fsync round commits
    /// (`commitBatch`) just before it runs. Each commit rewrote the same last pages of the
    /// ledger's and the documents' tables and indexes; one commit per round writes them once,
    /// and the fsync that bounds the server has fewer pages to write. A write that fails rolls
    /// back its savepoint alone; one after which SQLite rolled back the whole transaction
    /// loses the batch, and every reply that depended on it becomes a 500. With the group
    /// commit off, a plain transaction.
    func batchedTransaction<T>(_ body: () throws -> T) throws -> T {
        guard groupCommit else { return try transaction(body) }
        if !batchOpen {
            try db.setDurability(.normal)
            try db.run("BEGIN IMMEDIATE")
            openBatch.store(committedNumber + 1, ordering: .sequentiallyConsistent)
        }
        try db.run("SAVEPOINT request")
        do {
            let result = try body()
            try db.run("RELEASE request")
            return result
        } catch {
            if db.inTransaction {
                _ = try? db.run("ROLLBACK TO request")
                _ = try? db.run("RELEASE request")
            } else {
                loseBatch(error)
            }
            throw error
        }
    }

    /// Commits the open batch, if any (an fsync round calls it first). Its number is taken
    /// either way: committed, or lost with its reason.
    func commitBatch() {
        guard batchOpen else { return }
        do {
            try db.run("COMMIT")
            openBatch.store(0, ordering: .sequentiallyConsistent)
        } catch {
            if db.inTransaction { _ = try? db.run("ROLLBACK") }
            loseBatch(error)
        }
    }

    private func loseBatch(_ error: any Error) {
        let number = openBatch.load(ordering: .sequentiallyConsistent)
        lostBatches.add(1, ordering: .sequentiallyConsistent)
        lost.withLock { lost in
            lost.append((number, "\(error)"))
            if lost.count > 64 { lost.removeFirst(lost.count - 64) }
        }
        openBatch.store(0, ordering: .sequentiallyConsistent)
        FileHandle.standardError.write(Data("formsync server: a batch of writes was lost: \(error)\n".utf8))
    }

    /// The number of the last commit: the connection's commits, with each lost batch counted
    /// as one, so that numbers are never given twice. What `walSync` is asked to make durable.
    var committedNumber: UInt64 { db.commitCount + lostBatches.load(ordering: .sequentiallyConsistent) }

    /// What a reply must wait for: the open batch's number, or the last commit's. Safe to read
    /// outside the server's lock; a thread that wrote reads at least its write's number.
    var durabilityGate: UInt64 {
        let open = openBatch.load(ordering: .sequentiallyConsistent)
        return max(open, committedNumber)
    }

    /// Why a batch numbered from `numbers` was lost, if one was.
    func lostBatch(in numbers: ClosedRange<UInt64>) -> String? {
        lost.withLock { lost in lost.last { numbers.contains($0.number) }?.reason }
    }

    /// The open batch's number; 0 when none is open.
    private let openBatch = Atomic<UInt64>(0)
    private var batchOpen: Bool { openBatch.load(ordering: .sequentiallyConsistent) != 0 }
    private let lostBatches = Atomic<UInt64>(0)
    private let lost = Mutex<[(number: UInt64, reason: String)]>([])

    /// Off: every write commits FULL on its own (the baseline of `formsync-lab bench server`).
    /// Read by handlers outside the server's lock, to know whether to wait for an fsync.
    var groupCommit: Bool {
        get { groupCommitFlag.load(ordering: .relaxed) }
        set { groupCommitFlag.store(newValue, ordering: .relaxed) }
    }
    private let groupCommitFlag = Atomic<Bool>(true)

    /// Keys whose request is being processed now, with their request's hash. Held in memory
    /// only: a key in flight has committed nothing (its work and its recorded reply commit
    /// together), so a server that dies forgets it and the client's retry is processed.
    private var inFlight: [String: Data] = [:]
    /// Uploads with an append in progress: one at a time per upload.
    let appending = Mutex<Set<String>>([])

    // MARK: Ledger

    func idempotentWrite(
        key: String, hash: Data, hold: (() -> Void)?, now: Int64, _ body: () throws -> RecordedReply
    ) throws -> LedgerOutcome {
        if let hold {
            // Marked in flight first and then held, so that a retry arriving meanwhile meets 409.
            if let known = exclusive({ () -> LedgerOutcome? in
                if let entry = ledgerEntry(key) { return Self.outcome(entry) }
                beginLedger(key, hash: hash)
                return nil
            }) {
                return known
            }
            hold()
        }
        return try exclusive {
            if hold == nil, let entry = ledgerEntry(key) { return Self.outcome(entry) }
            do {
                return .processed(
                    try batchedTransaction {
                        let response = try body()
                        try finishLedger(key, hash: hash, with: response, at: now)
                        return response
                    })
            } catch {
                abandonLedger(key)
                // Another server process on the same files may have answered the key meanwhile
                // (its in-flight mark is not visible here): its recorded reply is the answer.
                if let entry = ledgerEntry(key), entry.response != nil { return Self.outcome(entry) }
                throw error
            }
        }
    }

    private static func outcome(_ entry: LedgerEntry) -> LedgerOutcome {
        guard let response = entry.response else { return .inFlight }
        return .recorded(hash: entry.hash, response: response)
    }

    func ledgerEntry(_ key: String) -> LedgerEntry? {
        if let hash = inFlight[key] { return LedgerEntry(hash: hash, response: nil) }
        return
            (try? db.query("SELECT hash, status, headers, body FROM ledger WHERE key = ?", [.text(key)]) { row in
                let hash = row.blob(0) ?? Data()
                guard let status = row.optionalInt(1) else { return LedgerEntry(hash: hash, response: nil) }
                return LedgerEntry(
                    hash: hash, response: RecordedReply(status: Int(status), headerLines: row.text(2) ?? "", body: row.blob(3) ?? Data()))
            })?.first
    }

    /// Marks `key` in flight (a second request with it gets 409 until it finishes).
    func beginLedger(_ key: String, hash: Data) {
        inFlight[key] = hash
    }

    /// Records the reply to `key`'s request, in the transaction of its work.
    func finishLedger(_ key: String, hash: Data, with response: RecordedReply, at now: Int64) throws {
        try db.run(
            "INSERT INTO ledger (key, hash, status, headers, body, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            [.text(key), .blob(hash), .integer(Int64(response.status)), .text(response.headerLines), .blob(response.body), .integer(now)])
        inFlight[key] = nil
    }

    /// Forgets `key`'s request, whose work did not commit.
    func abandonLedger(_ key: String) {
        inFlight[key] = nil
    }

    // MARK: Documents

    private static let documentColumns = "document_id, id, form, form_version, version, payload, applied_writes"

    private static func document(_ row: SQLiteConnection.Row) -> SyncServer.Document {
        SyncServer.Document(
            documentID: row.text(0) ?? "", id: row.int(1), form: row.text(2) ?? "", formVersion: Int(row.int(3)),
            version: Int(row.int(4)), payload: row.blob(5) ?? Data(), appliedWrites: Int(row.int(6)))
    }

    func document(_ documentID: String) -> SyncServer.Document? {
        (try? db.query("SELECT \(Self.documentColumns) FROM documents WHERE document_id = ?", [.text(documentID)], Self.document))?.first
    }

    func documentCount() -> Int {
        Int((try? db.query("SELECT COUNT(*) FROM documents", [], { $0.int(0) }))?.first ?? 0)
    }

    func documents() -> [SyncServer.Document] {
        (try? db.query("SELECT \(Self.documentColumns) FROM documents ORDER BY id", [], Self.document)) ?? []
    }

    func createDocument(
        _ documentID: String, form: String, formVersion: Int, workspace: String, principal: String, payload: Data, at now: Int64
    ) throws -> SyncServer.Document {
        try db.run(
            """
            INSERT INTO documents (id, document_id, form, form_version, workspace, principal, version, payload, applied_writes, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, 1, ?, 1, ?, ?)
            """,
            [
                .integer(try nextEntityID()), .text(documentID), .text(form), .integer(Int64(formVersion)), .text(workspace),
                .text(principal), .blob(payload),
                .integer(now), .integer(now),
            ])
        return document(documentID)!
    }

    func updateDocument(_ documentID: String, payload: Data, countingWrite: Bool, at now: Int64) throws -> SyncServer.Document {
        try db.run(
            """
            UPDATE documents SET payload = ?, version = version + 1, applied_writes = applied_writes + ?, updated_at = ?
            WHERE document_id = ?
            """, [.blob(payload), .integer(countingWrite ? 1 : 0), .integer(now), .text(documentID)])
        return document(documentID)!
    }

    // MARK: Files

    func storeFile(
        _ documentID: String, workspace: String, principal: String, bytes: Data, digest: Data, contentType: String?, mediaType: String,
        at now: Int64
    ) throws
        -> (id: Int64, created: Bool, sameBytes: Bool)
    {
        if let existing = try file(document: documentID) {
            return (existing.id, false, existing.digest == digest)
        }
        let path = blobPath(digest)
        if !FileManager.default.fileExists(atPath: path) {
            try durableFiles.write(bytes, to: path)
        }
        return (
            try insertFile(
                documentID, workspace: workspace, principal: principal, digest: digest, contentType: contentType, mediaType: mediaType,
                byteCount: Int64(bytes.count), at: now), true, true
        )
    }

    func insertFile(
        _ documentID: String, workspace: String, principal: String, digest: Data, contentType: String?, mediaType: String, byteCount: Int64,
        at now: Int64
    ) throws -> Int64 {
        try db.run(
            "INSERT INTO files (document_id, workspace, principal, digest, content_type, media_type, byte_count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(documentID), .text(workspace), .text(principal), .blob(digest), contentType.map(SQLValue.text) ?? .null,
                .text(mediaType), .integer(byteCount), .integer(now),
            ])
        return db.lastInsertRowID
    }

    func file(document documentID: String) throws -> (id: Int64, digest: Data, byteCount: Int64)? {
        try db.query(
            "SELECT id, digest, byte_count FROM files WHERE document_id = ?", [.text(documentID)],
            { ($0.int(0), $0.blob(1) ?? Data(), $0.int(2)) }
        ).first
    }

    func fileIDs() -> [Int64] {
        (try? db.query("SELECT id FROM files ORDER BY id", [], { $0.int(0) })) ?? []
    }

    func fileBytes(_ id: Int64) -> Data? {
        guard let digest = (try? db.query("SELECT digest FROM files WHERE id = ?", [.integer(id)], { $0.blob(0) ?? Data() }))?.first else {
            return nil
        }
        return FileManager.default.contents(atPath: blobPath(digest))
    }

    func fileBytes(digest: Data, from offset: Int64, count: Int) throws -> Data {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: blobPath(digest)))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(max(0, offset)))
        return try handle.read(upToCount: max(0, count)) ?? Data()
    }

    func blobPath(_ digest: Data) -> String {
        (filesDirectory as NSString).appendingPathComponent(digest.map { String(format: "%02x", $0) }.joined() + ".bin")
    }
}
