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
    /// The bytes of stored files and unfinished uploads.
    var blobs: FileBlobs

    /// The mode of every folder the server creates: its owner's alone.
    static var ownerOnlyFolder: [FileAttributeKey: Any] { [.posixPermissions: 0o700] }

    /// Makes commits durable in groups (see `transaction`).
    let walSync: WALSync
    /// The writes made between two fsyncs, committed together.
    let batches: WriteBatches
    /// The idempotency ledger's table and the keys in flight.
    let ledger: SQLiteLedger
    /// Records, their change feed and the id sequence.
    let recordTable: SQLiteRecords
    /// Tokens, devices and enrolments.
    let credentials: SQLiteCredentials
    let sqliteSupport: SQLiteSupport
    var support: any SupportStore { sqliteSupport }
    let sqliteHistory: SQLiteHistory
    var history: any HistoryStore { sqliteHistory }
    let sqliteWebhooks: SQLiteWebhooks
    var webhooks: any WebhookStore { sqliteWebhooks }
    /// Writes stored files and their names durably (tests replace it with a disk that refuses).
    var durableFiles: DurableFiles {
        get { blobs.durable }
        set { blobs.durable = newValue }
    }

    /// One unit of work at a time: the connection, the open batch and the keys in flight.
    private let lock = NSLock()

    init(directory: String, now: Int64) throws {
        blobs = try FileBlobs(directory: (directory as NSString).appendingPathComponent("files"))
        let path = (directory as NSString).appendingPathComponent("server.sqlite")
        db = try SQLiteConnection(path: path)
        // Owner-only, whatever the umask: the database holds every workspace's documents. SQLite
        // gives a log or shared-memory file it creates later the database file's mode.
        for file in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        }
        walSync = WALSync(databasePath: path)
        batches = WriteBatches(db: db)
        ledger = SQLiteLedger(db: db)
        recordTable = SQLiteRecords(db: db)
        credentials = SQLiteCredentials(db: db)
        sqliteSupport = SQLiteSupport(db: db)
        sqliteHistory = SQLiteHistory(db: db)
        sqliteWebhooks = SQLiteWebhooks(db: db)
        try SQLiteServerSchema.migrations.migrate(db, now: now)
        // A key left "in flight" by a server that died never committed its work (the work and
        // its recorded reply commit together): forget it so the client's retry is processed.
        try db.run("DELETE FROM ledger WHERE status IS NULL")
        // A server killed between a commit and its fsync left that commit in the log, not on
        // disk; a retry would now find its recorded reply and be answered before any fsync.
        try walSync.syncLog()
        walSync.commitBeforeEachRound { [weak self] in
            guard let self else { return 0 }
            return self.exclusive {
                self.batches.commit()
                return self.batches.committedNumber
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
        exclusive { batches.commit() }
    }

    var fsyncCount: Int { walSync.fsyncCount }
    var fsyncNanoseconds: UInt64 { walSync.fsyncNanoseconds }

    // MARK: Durability

    /// A write made now joins the open batch or opens the next one: no earlier number.
    func durabilityMark() -> UInt64 { batches.committedNumber + 1 }

    func whenDurable(since mark: UInt64, _ complete: @escaping @Sendable (DurabilityFailure?) -> Void) {
        let gate = batches.durabilityGate
        guard groupCommit else { return complete(nil) }
        walSync.whenDurable(through: gate) { [self] failure in
            if let failure {
                complete(.notDurable("\(failure)"))
            } else if mark <= gate, batches.lostBatch(in: mark...gate) != nil {
                complete(.lost)
            } else {
                complete(nil)
            }
        }
    }

    /// Commits at `synchronous=NORMAL` (see `WriteBatches.transaction`).
    func transaction<T>(_ body: () throws -> T) throws -> T { try batches.transaction(body) }

    /// Off: every write commits FULL on its own (the baseline of `formsync-lab bench server`).
    var groupCommit: Bool {
        get { batches.groupCommit }
        set { batches.groupCommit = newValue }
    }

    /// Uploads with an append in progress: one at a time per upload.
    let appending = Mutex<Set<String>>([])

    // MARK: Ledger

    func idempotentWrite(
        key: String, hash: Data, hold: (() -> Void)?, now: Int64, document: String?, token: TokenProof?,
        _ body: () throws -> RecordedReply
    ) throws -> LedgerOutcome {
        if let hold {
            // Marked in flight first and then held, so that a retry arriving meanwhile meets 409.
            if let known = exclusive({ () -> LedgerOutcome? in
                if let entry = ledger.entry(key) { return entry.outcome }
                ledger.begin(key, hash: hash)
                return nil
            }) {
                return known
            }
            hold()
        }
        return try exclusive {
            if hold == nil, let entry = ledger.entry(key) { return entry.outcome }
            do {
                return .processed(
                    try batches.batched {
                        let response = try body()
                        try ledger.finish(key, hash: hash, with: response, at: now)
                        return response
                    })
            } catch {
                ledger.abandon(key)
                // Another server process on the same files may have answered the key meanwhile
                // (its in-flight mark is not visible here): its recorded reply is the answer.
                if let entry = ledger.entry(key), entry.response != nil { return entry.outcome }
                throw error
            }
        }
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
                .integer(try recordTable.nextEntityID()), .text(documentID), .text(form), .integer(Int64(formVersion)), .text(workspace),
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

    // MARK: Records (`SQLiteRecords`)

    func nextEntityID() throws -> Int64 { try recordTable.nextEntityID() }
    func holder(ofID id: Int64) throws -> String? { try recordTable.holder(ofID: id) }
    func noteCreatedRecords(document id: String, _ all: [CreatedRecord]) throws { try recordTable.noteCreatedRecords(document: id, all) }
    func createdRecords(document documentID: String) throws -> [CreatedRecord] { try recordTable.createdRecords(document: documentID) }
    func records(workspace: String) throws -> [StoredRecord] { try recordTable.records(workspace: workspace) }
    func lastChange() throws -> Int64 { try recordTable.lastChange() }
    func feedRemaining(workspace: String, principal: String?, selection: FeedSelection, after cursor: Int64, cap: Int) throws -> Int {
        try recordTable.feedRemaining(workspace: workspace, principal: principal, selection: selection, after: cursor, cap: cap)
    }

    func record(workspace: String, type: String, id: Int64) throws -> StoredRecord? {
        try recordTable.record(workspace: workspace, type: type, id: id)
    }

    func putRecord(workspace: String, type: String, id: Int64, scope: String, payload: Data, files: [Int64], at now: Int64) throws -> Int {
        try recordTable.putRecord(workspace: workspace, type: type, id: id, scope: scope, payload: payload, files: files, at: now)
    }

    func deleteRecord(workspace: String, type: String, id: Int64) throws -> Bool {
        try recordTable.deleteRecord(workspace: workspace, type: type, id: id)
    }

    func feed(workspace: String, principal: String?, selection: FeedSelection, after cursor: Int64, limit: Int) throws -> [FeedEntry] {
        try recordTable.feed(workspace: workspace, principal: principal, selection: selection, after: cursor, limit: limit)
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
        try blobs.store(bytes, digest: digest)
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
        return blobs.contents(of: digest)
    }

    func fileBytes(digest: Data, from offset: Int64, count: Int) throws -> Data {
        try blobs.read(digest, from: offset, count: count)
    }
}

extension SyncServer {
    /// The embedded store, for tests that reach into it (a server on PostgreSQL has none).
    var sqliteStore: SQLiteServerStore { store as! SQLiteServerStore }
}
