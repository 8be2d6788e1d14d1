import FormSyncModel
import FormSyncServer
import Foundation
import Synchronization

/// The reference server's store in PostgreSQL, shared by any number of `formsync serve`
/// processes (nodes): everything a correct answer needs is in the database, files included
/// (in `blobs`, in chunks, as ODK Central keeps them), so that any node serves any request.
///
/// Each rule that one process kept with its lock is kept by the database instead:
/// - an idempotency key is claimed by inserting its ledger row first; a second node with the
///   same key waits on that row and then replays the recorded reply (or answers 409 when the
///   first one takes longer than `lock_timeout`);
/// - a read made to decide a write (`record`, `document`, `holder`) locks what it read until
///   the transaction ends, and a transaction that lost a race runs again;
/// - the change feed is in commit order (`PostgresServerStore+Records`);
/// - one append at a time per upload, by a session lock that PostgreSQL releases the moment the
///   node holding it dies.
/// Commits are durable when `COMMIT` returns (`synchronous_commit` on): a reply never waits
/// for anything else.
package final class PostgresServerStore: ServerStore, @unchecked Sendable {
    let pool: PostgresConnectionPool
    /// Numbers the feed after writes, off their path (set once, at the end of `init`).
    private(set) var sequencer: PostgresSequencer!
    /// The connections holding an upload's append lock, by upload id (see `claimAppend`).
    let appendHolders = Mutex<[String: PostgresConnection]>([:])
    /// Where the database is (with its password, if the URL has one: never print it as is).
    package let url: String
    /// How long a request waits for another holding the same idempotency key before it is
    /// answered 409 in flight (one about to commit is replayed instead).
    let keyWaitMilliseconds: Int
    /// How long any other statement waits for a lock before its transaction gives up (500; the
    /// client retries under its key).
    static let lockWaitMilliseconds = 10_000
    /// How many times a transaction that lost a race (serialization, deadlock, unique key) runs again.
    static let maxAttempts = 8

    /// Opens the store at `url`. With `migrate`, applies the migrations the database lacks
    /// (once, even when several nodes start together); without it, refuses a database whose
    /// schema is not exactly the one this build knows.
    package init(url: String, migrate: Bool, now: Int64, keyWaitMilliseconds: Int = 200) throws {
        pool = PostgresConnectionPool(url: url)
        self.url = url
        self.keyWaitMilliseconds = keyWaitMilliseconds
        try pool.with { connection in
            if migrate { try PostgresSchema.migrate(connection, now: now) }
            try PostgresSchema.check(connection)
        }
        sequencer = PostgresSequencer { [weak self] in try self?.sequenceChanges() }
    }

    package var sharedAcrossNodes: Bool { true }

    /// The schema version this build knows.
    package static var schemaVersion: Int { PostgresSchema.latest }

    package func exclusive<T>(_ body: () throws -> T) rethrows -> T {
        try pool.scope(body)
    }

    package func isUnavailable(_ error: any Error) -> Bool {
        guard let error = error as? PostgresError else { return false }
        return error.isConnectionLost || error.isRetryable || error.isLockTimeout
    }

    package func transaction<T>(_ body: () throws -> T) throws -> T {
        try pool.scope {
            let scope = pool.currentScope!
            if scope.transactionOpen { return try body() }
            return try retried { try inTransaction(scope, begin: "BEGIN", body) }
        }
    }

    /// Runs `attempt` again while it loses races (serialization, deadlock, a unique key), a
    /// bounded number of times.
    private func retried<T>(_ attempt: () throws -> T) throws -> T {
        var attempts = 0
        while true {
            attempts += 1
            do {
                return try attempt()
            } catch let error as PostgresError where (error.isRetryable || error.isUniqueViolation) && attempts < Self.maxAttempts {
                continue
            }
        }
    }

    /// One attempt: BEGIN, `body`, COMMIT (ROLLBACK when anything threw); a commit that wrote
    /// changes asks the feed's sequencer for a pass, and does not wait for it.
    private func inTransaction<T>(_ scope: PostgresConnectionPool.Scope, begin: String, _ body: () throws -> T) throws -> T {
        // Sent with the transaction's first statement, in one round trip.
        try pool.with { connection in
            for statement in begin.split(separator: ";") { connection.later(statement.trimmingCharacters(in: .whitespaces)) }
        }
        scope.transactionOpen = true
        scope.changesWritten = false
        scope.lockedRows = [:]
        defer {
            scope.transactionOpen = false
            scope.lockedRows = [:]
        }
        let result: T
        do {
            result = try body()
            try pool.with { try $0.run("COMMIT") }
        } catch {
            _ = try? pool.with { try $0.run("ROLLBACK") }
            throw error
        }
        scope.transactionOpen = false
        if scope.changesWritten { sequencer.request() }
        return result
    }

    package func idempotentWrite(
        key: String, hash: Data, hold: (() -> Void)?, now: Int64, document: String?, token: TokenProof?,
        _ body: () throws -> RecordedReply
    ) throws -> LedgerOutcome {
        try pool.scope {
            var attempt = 0
            while true {
                attempt += 1
                do {
                    // The transaction begins with a short lock wait, for the claim below only.
                    return try retried {
                        try inTransaction(pool.currentScope!, begin: "BEGIN; SET LOCAL lock_timeout = \(max(1, keyWaitMilliseconds))") {
                            // The row is the claim: a second request with the key waits here until
                            // this transaction ends, then finds the reply it recorded.
                            let claim = (
                                sql: "INSERT INTO ledger (key, hash, created_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING",
                                parameters: [PostgresValue.text(key), .bytes(hash), .integer(now)]
                            )
                            let longWait = "SET LOCAL lock_timeout = \(Self.lockWaitMilliseconds)"
                            let check =
                                token.map { [(sql: Self.grantQuery, parameters: [PostgresValue.bytes($0.digest), .text("access")])] } ?? []
                            let claimed: Int
                            var granted: StoredGrant?
                            if let document, hold == nil {
                                // The token's check and what the write will read of its document go
                                // with the claim, read after it in the same round trip (the document
                                // locked, under the long wait).
                                let rows = try pool.with { try $0.queryEach([claim, (longWait, [])] + check + prefetch(document)) }
                                claimed = rows[0].affected
                                if !check.isEmpty { granted = Self.storedGrant(rows[2]) }
                                let read = 2 + check.count
                                if claimed == 1 { keepPrefetched(owner: rows[read], document: rows[read + 1], documentID: document) }
                            } else {
                                claimed = try pool.with { try $0.query(claim.sql, claim.parameters).affected }
                                if claimed == 1 {
                                    try pool.with { $0.later(longWait) }
                                    hold?()
                                }
                                if let check = check.first { granted = Self.storedGrant(try query(check.sql, check.parameters)) }
                            }
                            if let token, !token.holds(granted, now: now) { throw TokenWithdrawn() }
                            guard claimed == 1 else { return try recorded(key) ?? .inFlight }
                            let response = try body()
                            // Sent with the COMMIT.
                            try pool.with {
                                $0.later(
                                    "UPDATE ledger SET status = $2, headers = $3, body = $4 WHERE key = $1",
                                    [.text(key), .integer(Int64(response.status)), .text(response.headerLines), .bytes(response.body)])
                            }
                            return .processed(response)
                        }
                    }
                } catch is TokenWithdrawn {
                    return .tokenWithdrawn
                } catch let error as PostgresError where error.isLockTimeout {
                    return .inFlight
                } catch let error as PostgresError where error.isConnectionLost && attempt < 3 {
                    // Whether the commit happened is unknown: the ledger says, on a new connection.
                    pool.drain()
                    if let known = try? recorded(key) { return known }
                    continue
                }
            }
        }
    }

    /// Ends a write whose token no longer holds (its transaction rolls back).
    private struct TokenWithdrawn: Error {}

    /// The recorded reply to `key`, if it committed.
    private func recorded(_ key: String) throws -> LedgerOutcome? {
        let rows = try pool.with { try $0.query("SELECT hash, status, headers, body FROM ledger WHERE key = $1", [.text(key)]) }
        guard rows.count == 1, let status = rows.int(0, 1) else { return nil }
        return .recorded(
            hash: rows.bytes(0, 0) ?? Data(),
            response: RecordedReply(status: Int(status), headerLines: rows.text(0, 2) ?? "", body: rows.bytes(0, 3) ?? Data()))
    }

    // MARK: Durability: a commit is durable when it returns.

    package func durabilityMark() -> UInt64 { 0 }
    package func whenDurable(since mark: UInt64, _ complete: @escaping @Sendable (DurabilityFailure?) -> Void) { complete(nil) }
    package func flush() { pool.drain() }
    package var groupCommit: Bool {
        get { false }
        set {}
    }
    package var fsyncCount: Int { 0 }
    package var fsyncNanoseconds: UInt64 { 0 }

    // MARK: Statements

    /// ` FOR UPDATE` inside a transaction: what a write reads stays as read until it commits.
    var lockingClause: String { pool.currentScope?.transactionOpen == true ? " FOR UPDATE" : "" }

    @discardableResult
    func query(_ sql: String, _ parameters: [PostgresValue] = []) throws -> PostgresRows {
        try pool.with { try $0.query(sql, parameters) }
    }

    // MARK: Documents

    private static let documentColumns = "document_id, id, form, form_version, version, payload, applied_writes"

    private static func document(_ rows: PostgresRows, _ row: Int) -> SyncServer.Document {
        SyncServer.Document(
            documentID: rows.text(row, 0) ?? "", id: rows.int(row, 1) ?? 0, form: rows.text(row, 2) ?? "",
            formVersion: Int(rows.int(row, 3) ?? 0),
            version: Int(rows.int(row, 4) ?? 0), payload: rows.bytes(row, 5) ?? Data(), appliedWrites: Int(rows.int(row, 6) ?? 0))
    }

    package func document(_ documentID: String) -> SyncServer.Document? {
        if let locked = lockedRow("document", documentID) as SyncServer.Document? { return locked }
        if lockedRow("no-document", documentID) as Bool? == true { return nil }
        guard
            let rows = try? query(
                "SELECT \(Self.documentColumns) FROM documents WHERE document_id = $1\(lockingClause)", [.text(documentID)]),
            rows.count == 1
        else { return nil }
        return keepLocked(Self.document(rows, 0), "document", documentID)
    }

    /// A row this transaction locked or wrote under `key`, when one is open and holds it.
    private func lockedRow<T: Sendable>(_ kind: String, _ key: String) -> T? {
        pool.currentScope.flatMap { $0.transactionOpen ? $0.lockedRows[kind + ":" + key] as? T : nil }
    }

    /// Keeps `row` for the rest of the open transaction (nothing outside one), and returns it;
    /// a document or owner kept replaces the mark that there was none.
    @discardableResult
    private func keepLocked<T: Sendable>(_ row: T, _ kind: String, _ key: String) -> T {
        if let scope = pool.currentScope, scope.transactionOpen {
            scope.lockedRows[kind + ":" + key] = row
            scope.lockedRows["no-" + kind + ":" + key] = nil
        }
        return row
    }

    /// Forgets that this transaction found no owner of `documentID`: it just stored a row that
    /// makes one (a file, an upload).
    func forgetMissingOwner(_ documentID: String) {
        pool.currentScope?.lockedRows["no-owner:" + documentID] = nil
    }

    /// The reads a write makes of its document first (its owner, then its row, locked), to be
    /// sent with the ledger's claim.
    private func prefetch(_ documentID: String) -> [(sql: String, parameters: [PostgresValue])] {
        [(Self.ownerQuery, [.text(documentID)]), (Self.lockedDocumentQuery, [.text(documentID)])]
    }

    /// Keeps what `prefetch` read for the rest of the transaction, absence included (the
    /// document's row is locked; a document, file or upload stored later in the transaction
    /// replaces the mark). An owner known only from a file or an upload is read again, as
    /// `owner(of:)` does.
    private func keepPrefetched(owner: PostgresRows, document: PostgresRows, documentID: String) {
        guard let scope = pool.currentScope, scope.transactionOpen else { return }
        if owner.count == 0 {
            scope.lockedRows["no-owner:" + documentID] = true
        } else if let form = owner.text(0, 0), let principal = owner.text(0, 2) {
            keepLocked(DocumentOwner(form: form, workspace: owner.text(0, 1) ?? "", principal: principal), "owner", documentID)
        }
        if document.count == 1 {
            keepLocked(Self.document(document, 0), "document", documentID)
        } else {
            scope.lockedRows["no-document:" + documentID] = true
        }
    }

    private static let lockedDocumentQuery = "SELECT " + documentColumns + " FROM documents WHERE document_id = $1 FOR UPDATE"

    package func documentCount() -> Int {
        Int((try? query("SELECT COUNT(*) FROM documents"))?.int(0, 0) ?? 0)
    }

    package func documents() -> [SyncServer.Document] {
        guard let rows = try? query("SELECT \(Self.documentColumns) FROM documents ORDER BY id") else { return [] }
        return (0..<rows.count).map { Self.document(rows, $0) }
    }

    package func createDocument(
        _ documentID: String, form: String, formVersion: Int, workspace: String, principal: String, payload: Data, at now: Int64
    ) throws -> SyncServer.Document {
        let id = try nextEntityID()
        let insert = """
            INSERT INTO documents (id, document_id, form, form_version, workspace, principal, version, payload, applied_writes, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, 1, $7, 1, $8, $8)
            """
        let values: [PostgresValue] = [
            .integer(id), .text(documentID), .text(form), .integer(Int64(formVersion)), .text(workspace), .text(principal),
            .bytes(payload), .integer(now),
        ]
        let document: SyncServer.Document
        if pool.currentScope?.transactionOpen == true {
            // Its row is what was sent: it goes with the transaction's next statement, and a
            // document id another node took meanwhile fails that statement (and the transaction).
            try pool.with { $0.later(insert, values) }
            document = SyncServer.Document(
                documentID: documentID, id: id, form: form, formVersion: formVersion, version: 1, payload: payload, appliedWrites: 1)
        } else {
            document = Self.document(try query(insert + " RETURNING \(Self.documentColumns)", values), 0)
        }
        keepLocked(DocumentOwner(form: form, workspace: workspace, principal: principal), "owner", documentID)
        return keepLocked(document, "document", documentID)
    }

    package func updateDocument(_ documentID: String, payload: Data, countingWrite: Bool, at now: Int64) throws -> SyncServer.Document {
        let rows = try query(
            """
            UPDATE documents SET payload = $2, version = version + 1, applied_writes = applied_writes + $4, updated_at = $3
            WHERE document_id = $1 RETURNING \(Self.documentColumns)
            """, [.text(documentID), .bytes(payload), .integer(now), .integer(countingWrite ? 1 : 0)])
        guard rows.count == 1 else {
            throw PostgresError(sqlState: "02000", message: "document \(documentID) is gone", statement: "UPDATE documents")
        }
        return keepLocked(Self.document(rows, 0), "document", documentID)
    }

    // MARK: Files

    /// Files are kept in chunks of this size (a row stays well under PostgreSQL's 1 GB limit).
    static let chunkBytes = 1 << 20

    package func storeFile(
        _ documentID: String, workspace: String, principal: String, bytes: Data, digest: Data, contentType: String?, mediaType: String,
        at now: Int64
    ) throws
        -> (id: Int64, created: Bool, sameBytes: Bool)
    {
        if let existing = try file(document: documentID) {
            return (existing.id, false, existing.digest == digest)
        }
        if try query("SELECT 1 FROM blobs WHERE digest = $1 LIMIT 1", [.bytes(digest)]).count == 0 {
            var start = 0
            repeat {
                let end = min(bytes.count, start + Self.chunkBytes)
                try query(
                    "INSERT INTO blobs (digest, start, bytes) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                    [.bytes(digest), .integer(Int64(start)), .bytes(bytes.subdata(in: bytes.startIndex + start..<bytes.startIndex + end))])
                start = end
            } while start < bytes.count
        }
        let id = try insertFile(
            documentID, workspace: workspace, principal: principal, digest: digest, contentType: contentType, mediaType: mediaType,
            byteCount: Int64(bytes.count), at: now)
        return (id, true, true)
    }

    func insertFile(
        _ documentID: String, workspace: String, principal: String, digest: Data, contentType: String?, mediaType: String, byteCount: Int64,
        at now: Int64
    ) throws -> Int64 {
        forgetMissingOwner(documentID)
        return try query(
            """
            INSERT INTO files (document_id, workspace, principal, digest, content_type, media_type, byte_count, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id
            """,
            [
                .text(documentID), .text(workspace), .text(principal), .bytes(digest), contentType.map(PostgresValue.text) ?? .null,
                .text(mediaType), .integer(byteCount), .integer(now),
            ]
        ).int(0, 0) ?? 0
    }

    package func file(document documentID: String) throws -> (id: Int64, digest: Data, byteCount: Int64)? {
        let rows = try query("SELECT id, digest, byte_count FROM files WHERE document_id = $1", [.text(documentID)])
        guard rows.count == 1 else { return nil }
        return (rows.int(0, 0) ?? 0, rows.bytes(0, 1) ?? Data(), rows.int(0, 2) ?? 0)
    }

    package func fileIDs() -> [Int64] {
        guard let rows = try? query("SELECT id FROM files ORDER BY id") else { return [] }
        return (0..<rows.count).compactMap { rows.int($0, 0) }
    }

    package func fileBytes(digest: Data, from offset: Int64, count: Int) throws -> Data {
        guard count > 0, offset >= 0 else { return Data() }
        let end = offset.addingReportingOverflow(Int64(count)).partialValue
        // The chunks that overlap [offset, end): the last one starting at or before offset, and
        // every one starting before the end.
        let chunks = try query(
            """
            SELECT start, bytes FROM blobs WHERE digest = $1 AND start < $3
              AND start >= COALESCE((SELECT MAX(start) FROM blobs WHERE digest = $1 AND start <= $2), 0)
            ORDER BY start
            """, [.bytes(digest), .integer(offset), .integer(end)])
        var data = Data()
        for row in 0..<chunks.count {
            guard let start = chunks.int(row, 0), let bytes = chunks.bytes(row, 1) else { continue }
            let from = Int(max(0, offset - start))
            let to = Int(min(Int64(bytes.count), end - start))
            if from < to { data.append(bytes[bytes.startIndex + from..<bytes.startIndex + to]) }
        }
        return data
    }

    package func fileBytes(_ id: Int64) -> Data? {
        guard let found = try? query("SELECT digest FROM files WHERE id = $1", [.integer(id)]), found.count == 1,
            let digest = found.bytes(0, 0),
            let chunks = try? query("SELECT bytes FROM blobs WHERE digest = $1 ORDER BY start", [.bytes(digest)])
        else { return nil }
        var data = Data()
        for row in 0..<chunks.count { data.append(chunks.bytes(row, 0) ?? Data()) }
        return data
    }

    // MARK: Owners

    /// A document's owner as read from its row: its form, workspace and principal never change.
    private static let ownerQuery = """
        SELECT form, workspace, principal FROM documents WHERE document_id = $1
        UNION ALL SELECT NULL, workspace, principal FROM files WHERE document_id = $1
        UNION ALL SELECT NULL, workspace, principal FROM uploads WHERE document_id = $1
        LIMIT 1
        """

    private struct DocumentOwner: Sendable {
        var form: String
        var workspace: String
        var principal: String
    }

    package func owner(of documentID: String) -> (form: String?, workspace: String, principal: String?)? {
        if let known = lockedRow("owner", documentID) as DocumentOwner? { return (known.form, known.workspace, known.principal) }
        if lockedRow("no-owner", documentID) as Bool? == true { return nil }
        guard let rows = try? query(Self.ownerQuery, [.text(documentID)]), rows.count == 1 else { return nil }
        if let form = rows.text(0, 0), let principal = rows.text(0, 2) {
            keepLocked(DocumentOwner(form: form, workspace: rows.text(0, 1) ?? "", principal: principal), "owner", documentID)
        }
        return (rows.text(0, 0), rows.text(0, 1) ?? "", rows.text(0, 2))
    }
}
