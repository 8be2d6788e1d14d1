import FormSyncModel
import Foundation

/// Where the reference server keeps what it knows: the idempotency ledger, documents, files,
/// resumable uploads, records and their change feed, and token grants. `SyncServer` (the
/// protocol's logic) talks to nothing else. Two stores exist: `SQLiteServerStore`, the embedded
/// default (one process, one file, a group commit), and the PostgreSQL store of
/// `FormSyncPostgres`, which any number of server processes share.
///
/// Every call that reads and then writes runs inside `exclusive` (one unit of work: the SQLite
/// store's lock, or one PostgreSQL connection held for the body) and, when it writes, inside
/// `transaction`. A store shared by several processes (`sharedAcrossNodes`) must make each
/// rule hold across them: one application per idempotency key, a change feed in commit order,
/// and one append at a time per upload.
package protocol ServerStore: CredentialStore {
    /// Support requests and bundles (a part of the store of its own, in the same database).
    var support: any SupportStore { get }
    /// Every version of documents and records with its author, and reviews (a part of the
    /// store of its own, written in the same transaction as the version).
    var history: any HistoryStore { get }
    /// Webhooks and their deliveries (a durable queue in the same database).
    var webhooks: any WebhookStore { get }
    /// Whether other server processes use the same data: a node then caches nothing that
    /// another node could change (access tokens are read from the store on every request).
    var sharedAcrossNodes: Bool { get }
    /// Calls `changed` with the workspace of every change another node commits to the feed,
    /// until the listener is stopped; nil for a store no other node writes (this node tells its
    /// own long-polls of its own writes).
    func changeListener(_ changed: @escaping @Sendable (String) -> Void) -> (any ChangeListener)?

    /// Runs `body` as one unit of work: nothing else in this process interleaves store calls
    /// with it on the SQLite store; on PostgreSQL, its calls use one connection.
    func exclusive<T>(_ body: () throws -> T) rethrows -> T
    /// Whether `error`, thrown by this store, means its database cannot answer now (down,
    /// restarting, a connection lost, a lock not granted in time): a reply of `503` and a
    /// retry, not a `500`.
    func isUnavailable(_ error: any Error) -> Bool
    /// Runs `body` in one transaction (inside `exclusive`): all of it commits, or none.
    func transaction<T>(_ body: () throws -> T) throws -> T
    /// The idempotency ledger around a write: the recorded reply when `key` was answered, a
    /// mark that it is in flight, or `body`'s reply committed together with its work. `hold`: the
    /// request is marked in flight, then `hold` runs before its work (a delay or a held request:
    /// faults for tests). `document`: the document the write is about, which a store may read
    /// together with the claim (the PostgreSQL store does: one round trip for both). `token`:
    /// the access token the caller was found by, to check again inside the write's transaction
    /// (given for a store shared across nodes, where another node may revoke it at any time;
    /// the outcome is `tokenWithdrawn` when it no longer holds).
    func idempotentWrite(
        key: String, hash: Data, hold: (() -> Void)?, now: Int64, document: String?, token: TokenProof?,
        _ body: () throws -> RecordedReply
    ) throws -> LedgerOutcome

    /// A mark taken before a request runs; `whenDurable(since:)` waits for what it wrote.
    func durabilityMark() -> UInt64
    /// Calls `complete` once everything a request read or wrote since `mark` is durable, or
    /// with why it could not be made so.
    func whenDurable(since mark: UInt64, _ complete: @escaping @Sendable (DurabilityFailure?) -> Void)
    /// Commits what is still open (the server is stopping).
    func flush()
    /// Whether commits share fsyncs (the SQLite store; a benchmark turns it off).
    var groupCommit: Bool { get set }
    /// How many fsyncs of its log the store has run, and how long they took.
    var fsyncCount: Int { get }
    var fsyncNanoseconds: UInt64 { get }

    // MARK: Documents and files
    func document(_ documentID: String) -> SyncServer.Document?
    func documentCount() -> Int
    func documents() -> [SyncServer.Document]
    func createDocument(
        _ documentID: String, form: String, formVersion: Int, workspace: String, principal: String, payload: Data, at now: Int64
    ) throws
        -> SyncServer.Document
    /// A document's new payload (version + 1). `countingWrite`: a device's write applied (false
    /// for the server's own change, such as a pending file completed).
    func updateDocument(_ documentID: String, payload: Data, countingWrite: Bool, at now: Int64) throws -> SyncServer.Document
    /// Stores the bytes once per digest; the same file document is never stored twice. For a
    /// file document already held, `sameBytes` says whether these bytes are the ones it holds.
    /// `mediaType`: what the bytes' signature says they are ("" when not recognised).
    func storeFile(
        _ documentID: String, workspace: String, principal: String, bytes: Data, digest: Data, contentType: String?, mediaType: String,
        at now: Int64
    ) throws
        -> (id: Int64, created: Bool, sameBytes: Bool)
    /// A stored file by its id, of any workspace.
    func storedFile(id: Int64) throws -> StoredFile?
    /// The first stored file of `workspace` with these bytes.
    func storedFile(workspace: String, digest: Data) throws -> StoredFile?

    // MARK: Pending files
    /// Serialises, until the transaction ends, the writes that store or wait for these bytes in
    /// `workspace` (on every node), so that a pending file and its upload never miss each other.
    func lockFileDigest(workspace: String, digest: Data) throws
    /// Makes `files` the pending files of `documentID` (replacing what it had).
    func setPendingFiles(document documentID: String, _ files: [PendingFile]) throws
    /// The pending files of `workspace` waiting for these bytes.
    func pendingFiles(workspace: String, digest: Data) throws -> [PendingFile]
    /// Forgets one pending file (its bytes arrived).
    func removePendingFile(document documentID: String, pointer: String) throws
    /// Up to `limit` pending files of `workspace` (of one principal's documents, or all when
    /// nil), oldest first.
    func pendingFiles(workspace: String, principal: String?, limit: Int) throws -> [PendingFile]
    /// A stored file's id, digest and size, by its document id.
    func file(document documentID: String) throws -> (id: Int64, digest: Data, byteCount: Int64)?
    func fileIDs() -> [Int64]
    /// Whether a device of `principal` may fetch stored file `id` of `workspace`: its
    /// principal uploaded it, or a record it sees (unscoped, or in its scope) names it.
    func mayRead(file id: Int64, workspace: String, principal: String) throws -> Bool
    /// Lists the files every stored record names, once per database (records written before
    /// the store kept that list); `files` reads them from a record.
    func indexRecordFiles(_ files: (_ workspace: String, _ record: StoredRecord) -> [Int64]) throws
    func fileBytes(_ id: Int64) -> Data?
    /// Up to `count` bytes of the file with `digest` from `offset`, without reading the rest.
    func fileBytes(digest: Data, from offset: Int64, count: Int) throws -> Data

    // MARK: Owners
    /// Which form, workspace and principal a document id belongs to, if the server holds it as
    /// a document, a file or a resumable upload (`form` is nil for a file or an upload).
    func owner(of documentID: String) -> (form: String?, workspace: String, principal: String?)?

    // MARK: Records and the feed
    /// The next id for a document or a record (one sequence for both), stepping over ids the
    /// back office chose itself.
    func nextEntityID() throws -> Int64
    /// What holds `id`: a record's type, "" for a document that created no record under it, or
    /// nil when the id is free. Inside a transaction, the id stays claimed until it ends.
    func holder(ofID id: Int64) throws -> String?
    /// Keeps which records `document`'s lists created (in the transaction that created them).
    func noteCreatedRecords(document documentID: String, _ records: [CreatedRecord]) throws
    /// The records `document`'s lists created, by list and position.
    func createdRecords(document documentID: String) throws -> [CreatedRecord]
    /// One record; inside a transaction it stays locked until the transaction ends.
    func record(workspace: String, type: String, id: Int64) throws -> StoredRecord?
    func records(workspace: String) throws -> [StoredRecord]
    /// Writes a record's new state (version + 1), the stored files it names (`files`) and its
    /// change; returns the new version.
    func putRecord(workspace: String, type: String, id: Int64, scope: String, payload: Data, files: [Int64], at now: Int64) throws -> Int
    /// Removes a record; its scope's feed carries the deletion. False when there was none.
    func deleteRecord(workspace: String, type: String, id: Int64) throws -> Bool
    /// Up to `limit` feed entries after `cursor` that `selection` holds, in commit order: for a
    /// device of `principal` (unscoped records and those scoped to it), or for the back office
    /// (`principal` nil).
    func feed(workspace: String, principal: String?, selection: FeedSelection, after cursor: Int64, limit: Int) throws -> [FeedEntry]
    /// How many entries `feed` would give after `cursor`, counted up to `cap` (a page's
    /// `remaining`, for a device's progress).
    func feedRemaining(workspace: String, principal: String?, selection: FeedSelection, after cursor: Int64, cap: Int) throws -> Int
    /// The newest committed change's feed position: the feed's end as readers see it now.
    func lastChange() throws -> Int64
    /// The highest feed position ever handed out: a cursor beyond it comes from another
    /// database. (On a store that numbers changes after their commit, a record written again
    /// has no position until its next one, so the feed's end can briefly be below a cursor
    /// handed out a moment ago.)
    func highestChangePosition() throws -> Int64

    // MARK: Resumable uploads
    func upload(id: String) throws -> StoredUpload?
    func upload(document documentID: String) throws -> StoredUpload?
    /// Creates the upload resource and the empty place its bytes go.
    func createUpload(_ upload: StoredUpload, at now: Int64) throws
    /// Marks the upload busy for one append; false when another append holds it.
    func claimAppend(_ uploadID: String, at now: Int64) throws -> Bool
    func releaseAppend(_ uploadID: String)
    /// Writes `bytes` at `offset` durably, then moves the upload's offset past them.
    func appendUpload(_ uploadID: String, bytes: Data, at offset: Int64, now: Int64) throws
    /// The SHA-256 of the bytes held so far.
    func uploadDigest(_ uploadID: String) throws -> Data
    /// Throws the bytes away and starts the upload over at offset 0.
    func restartUpload(_ uploadID: String, at now: Int64) throws
    /// Makes a finished upload's bytes the stored file of its document; returns the file's id.
    /// Runs inside `transaction`.
    func completeUpload(_ upload: StoredUpload, digest: Data, mediaType: String, principal: String, at now: Int64) throws -> Int64
    /// The first bytes of an upload (at most `MediaSignature.prefixLength`), for its signature.
    func uploadPrefix(_ uploadID: String) throws -> Data
    /// Unfinished uploads and the bytes they announced, of one principal and of one workspace.
    func unfinishedUploads(principal: String, workspace: String) throws -> (count: Int64, bytes: Int64, workspaceBytes: Int64)
    /// Removes up to `limit` unfinished uploads not appended to since `cutoff`; returns how many went.
    @discardableResult
    func expireUploads(before cutoff: Int64, limit: Int) throws -> Int
}

/// What the idempotency ledger made of a write.
package enum LedgerOutcome {
    /// The write was processed now; its reply is committed with its work.
    case processed(RecordedReply)
    /// The key was answered before: the request's hash then, and the reply recorded.
    case recorded(hash: Data, response: RecordedReply)
    /// A request with this key is being processed now (here or on another node).
    case inFlight
    /// The access token no longer grants what it granted when the caller was found (revoked,
    /// expired or removed meanwhile): nothing was written.
    case tokenWithdrawn
}

/// An access token and what it was found to grant before a write (maybe when the request's
/// head arrived, before a long body): the write's transaction checks that it still does, so
/// that a revocation or expiry that came meanwhile, on any node, refuses the write.
package struct TokenProof: Sendable {
    /// The token's SHA-256, as the grants table keys it.
    package var digest: Data
    package var grant: SyncServer.Grant
    /// The device it was issued to (nil for a token issued without one).
    package var device: String?

    /// Whether the token, found now as `found` (nil: not found), still grants what it granted
    /// at `now`.
    package func holds(_ found: StoredGrant?, now: Int64) -> Bool {
        guard let found else { return false }
        return !found.deviceRevoked && found.expiresAt > now && found.grant == grant && found.device == device
    }
}

/// Why a reply could not be sent as it was made.
package enum DurabilityFailure: Sendable {
    /// The log could not be made durable.
    case notDurable(String)
    /// The batch of writes this request's write was part of did not commit.
    case lost
}

/// One record as the server holds it.
package struct StoredRecord: Sendable {
    package var type: String
    package var id: Int64
    package var version: Int
    package var scope: String
    package var payload: Data

    package init(type: String, id: Int64, version: Int, scope: String, payload: Data) {
        self.type = type
        self.id = id
        self.version = version
        self.scope = scope
        self.payload = payload
    }
}

/// One entry of the feed: the record's latest state in a scope, or its removal from it.
package struct FeedEntry: Sendable {
    package var seq: Int64
    package var type: String
    package var id: Int64
    package var deleted: Bool
    package var version: Int
    package var payload: Data?
    /// In a subscription's page: the record does not match the subscription.
    package var outside = false

    package init(seq: Int64, type: String, id: Int64, deleted: Bool, version: Int, payload: Data?, outside: Bool = false) {
        self.outside = outside
        self.seq = seq
        self.type = type
        self.id = id
        self.deleted = deleted
        self.version = version
        self.payload = payload
    }
}

/// A resumable upload as the server holds it.
package struct StoredUpload: Sendable {
    package var uploadID: String
    package var documentID: String
    package var workspace: String
    package var length: Int64
    package var offset: Int64
    package var digest: Data
    package var contentType: String?
    package var fileID: Int64?
    /// Who created it; nil for an upload stored before owners were recorded.
    package var principal: String?

    package init(
        uploadID: String, documentID: String, workspace: String, length: Int64, offset: Int64, digest: Data, contentType: String?,
        fileID: Int64?, principal: String?
    ) {
        self.uploadID = uploadID
        self.documentID = documentID
        self.workspace = workspace
        self.length = length
        self.offset = offset
        self.digest = digest
        self.contentType = contentType
        self.fileID = fileID
        self.principal = principal
    }
}

/// A stored file as admission checks it.
package struct StoredFile: Sendable, Equatable {
    package var id: Int64
    package var workspace: String
    package var digest: Data
    package var byteCount: Int64
    /// The media type the uploader declared.
    package var contentType: String?
    /// What the bytes' signature says ("" when not recognised; nil for a file stored before
    /// the server read signatures).
    package var mediaType: String?

    package init(id: Int64, workspace: String, digest: Data, byteCount: Int64, contentType: String?, mediaType: String?) {
        self.id = id
        self.workspace = workspace
        self.digest = digest
        self.byteCount = byteCount
        self.contentType = contentType
        self.mediaType = mediaType
    }
}

/// A file a document names by its digest before its bytes arrived (docs/PROTOCOL.md,
/// "Deferred files"), with what its upload must match.
/// Tells a node of changes other nodes commit, until stopped.
package protocol ChangeListener: Sendable {
    func stop()
}

extension ServerStore {
    package func highestChangePosition() throws -> Int64 { try lastChange() }

    package func changeListener(_ changed: @escaping @Sendable (String) -> Void) -> (any ChangeListener)? { nil }

    /// Every type's feed entries (see `feed(workspace:principal:selection:after:limit:)`).
    package func feed(workspace: String, principal: String?, after cursor: Int64, limit: Int) throws -> [FeedEntry] {
        try feed(workspace: workspace, principal: principal, selection: .all, after: cursor, limit: limit)
    }
}

/// A record a document's list created: the item it came from and the record it is.
package struct CreatedRecord: Sendable, Equatable {
    package var list: String
    package var position: Int
    package var type: String
    package var id: Int64

    package init(list: String, position: Int, type: String, id: Int64) {
        self.list = list
        self.position = position
        self.type = type
        self.id = id
    }
}

package struct PendingFile: Sendable, Equatable {
    package var documentID: String
    /// Where the reference sits in the document's payload.
    package var pointer: String
    package var workspace: String
    package var principal: String
    package var digest: Data
    package var byteCount: Int64
    package var contentType: String
    /// The field's accepted media types; empty accepts any.
    package var accepted: [String]
    /// The record the document wrote, whose copy of the reference completes with it.
    package var recordType: String?
    package var recordID: Int64?
    package var since: Int64

    package init(
        documentID: String, pointer: String, workspace: String, principal: String, digest: Data, byteCount: Int64, contentType: String,
        accepted: [String], recordType: String?, recordID: Int64?, since: Int64
    ) {
        self.documentID = documentID
        self.pointer = pointer
        self.workspace = workspace
        self.principal = principal
        self.digest = digest
        self.byteCount = byteCount
        self.contentType = contentType
        self.accepted = accepted
        self.recordType = recordType
        self.recordID = recordID
        self.since = since
    }
}

/// A store ran out of something it cannot make more of.
enum ServerStoreError: Error, CustomStringConvertible {
    case idsExhausted

    var description: String { "no ids are left below 2^53" }
}
