import Foundation

/// The PostgreSQL store's schema, in numbered migrations. A node applies them only when told to
/// (`formsync serve --migrate`), under an advisory lock so that nodes starting together apply
/// each one once; a node refuses a database whose schema is older (not migrated yet) or newer
/// (written by a newer FormSync) than the one it knows.
enum PostgresSchema {
    struct Migration {
        var version: Int
        var name: String
        var sql: String
    }

    /// The schema version a database is at, and the one this build knows.
    struct Mismatch: Error, CustomStringConvertible {
        var found: Int
        var known: Int
        var description: String {
            found < known
                ? "the database's schema is at version \(found) and this node needs \(known): run `formsync serve --database … --migrate` once (nodes started with --migrate apply it)"
                : "the database's schema is at version \(found), newer than this node knows (\(known)): run a FormSync at least as new as the one that migrated it"
        }
    }

    /// The advisory lock the migration holds (an arbitrary constant: "FSMIGRAT").
    static let migrationLock: Int64 = 0x4653_4D49_4752_4154

    static let migrations: [Migration] = [
        Migration(
            version: 1, name: "the reference server's tables",
            sql: """
                CREATE TABLE ledger (
                    key TEXT PRIMARY KEY,
                    hash BYTEA NOT NULL,
                    status INTEGER,
                    headers TEXT,
                    body BYTEA,
                    created_at BIGINT NOT NULL
                );
                CREATE SEQUENCE entity_ids MINVALUE 1 MAXVALUE 9007199254740991 NO CYCLE;
                CREATE TABLE documents (
                    id BIGINT PRIMARY KEY,
                    document_id TEXT NOT NULL UNIQUE,
                    form TEXT NOT NULL,
                    form_version INTEGER NOT NULL,
                    workspace TEXT NOT NULL,
                    principal TEXT,
                    version INTEGER NOT NULL,
                    payload BYTEA NOT NULL,
                    applied_writes INTEGER NOT NULL,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                );
                CREATE TABLE blobs (
                    digest BYTEA NOT NULL,
                    start BIGINT NOT NULL,
                    bytes BYTEA NOT NULL,
                    PRIMARY KEY (digest, start)
                );
                CREATE TABLE files (
                    id BIGSERIAL PRIMARY KEY,
                    document_id TEXT NOT NULL UNIQUE,
                    workspace TEXT NOT NULL,
                    principal TEXT,
                    digest BYTEA NOT NULL,
                    content_type TEXT,
                    byte_count BIGINT NOT NULL,
                    created_at BIGINT NOT NULL
                );
                CREATE TABLE uploads (
                    upload_id TEXT PRIMARY KEY,
                    document_id TEXT NOT NULL UNIQUE,
                    workspace TEXT NOT NULL,
                    principal TEXT,
                    length BIGINT NOT NULL,
                    "offset" BIGINT NOT NULL,
                    digest BYTEA NOT NULL,
                    content_type TEXT,
                    file_id BIGINT,
                    created_at BIGINT NOT NULL,
                    touched_at BIGINT NOT NULL
                );
                CREATE INDEX uploads_unfinished ON uploads (touched_at) WHERE file_id IS NULL;
                CREATE TABLE upload_parts (
                    upload_id TEXT NOT NULL,
                    start BIGINT NOT NULL,
                    bytes BYTEA NOT NULL,
                    PRIMARY KEY (upload_id, start)
                );
                CREATE TABLE grants (
                    digest BYTEA PRIMARY KEY,
                    kind TEXT NOT NULL,
                    principal TEXT NOT NULL,
                    role TEXT NOT NULL,
                    workspaces TEXT NOT NULL,
                    expires_at BIGINT NOT NULL
                );
                CREATE TABLE records (
                    workspace TEXT NOT NULL,
                    type TEXT NOT NULL,
                    id BIGINT NOT NULL,
                    version INTEGER NOT NULL,
                    scope TEXT NOT NULL,
                    payload BYTEA NOT NULL,
                    updated_at BIGINT NOT NULL,
                    PRIMARY KEY (workspace, type, id)
                );
                CREATE INDEX records_id ON records (id);
                CREATE SEQUENCE change_seq;
                CREATE TABLE changes (
                    workspace TEXT NOT NULL,
                    type TEXT NOT NULL,
                    id BIGINT NOT NULL,
                    scope TEXT NOT NULL,
                    deleted BOOLEAN NOT NULL,
                    seq BIGINT UNIQUE,
                    PRIMARY KEY (workspace, type, id, scope)
                );
                CREATE INDEX changes_feed ON changes (workspace, seq) WHERE seq IS NOT NULL;
                CREATE INDEX changes_unsequenced ON changes (id) WHERE seq IS NULL;
                """),
        // Files stored before this version have no signature reading (NULL: not checked).
        Migration(
            version: 2, name: "pending files and media types",
            sql: """
                ALTER TABLE files ADD COLUMN media_type TEXT;
                CREATE INDEX files_digest ON files (workspace, digest);
                CREATE TABLE pending_files (
                    document_id TEXT NOT NULL,
                    pointer TEXT NOT NULL,
                    workspace TEXT NOT NULL,
                    principal TEXT NOT NULL,
                    digest BYTEA NOT NULL,
                    byte_count BIGINT NOT NULL,
                    content_type TEXT NOT NULL,
                    accepted TEXT NOT NULL,
                    record_type TEXT,
                    record_id BIGINT,
                    created_at BIGINT NOT NULL,
                    PRIMARY KEY (document_id, pointer)
                );
                CREATE INDEX pending_files_digest ON pending_files (workspace, digest);
                CREATE INDEX pending_files_age ON pending_files (workspace, created_at);
                """),
        // Who may fetch a stored file: its uploader, and whoever sees a record naming it.
        Migration(
            version: 3, name: "the files records name",
            sql: """
                CREATE TABLE record_files (
                    workspace TEXT NOT NULL,
                    file_id BIGINT NOT NULL,
                    type TEXT NOT NULL,
                    id BIGINT NOT NULL,
                    PRIMARY KEY (workspace, file_id, type, id)
                );
                CREATE INDEX record_files_record ON record_files (workspace, type, id);
                CREATE TABLE record_files_indexed (done INTEGER NOT NULL);
                """),
        // Devices, their refresh generations, and enrolment codes; a refresh token from before
        // gets its device at its first refresh.
        Migration(
            version: 4, name: "devices and enrolments",
            sql: """
                CREATE TABLE devices (
                    device_id TEXT PRIMARY KEY,
                    principal TEXT NOT NULL,
                    role TEXT NOT NULL,
                    workspaces TEXT NOT NULL,
                    name TEXT NOT NULL,
                    app_version TEXT NOT NULL,
                    spec_version TEXT NOT NULL,
                    installation TEXT,
                    enrolled_at BIGINT NOT NULL,
                    last_seen_at BIGINT NOT NULL,
                    current_generation BIGINT NOT NULL,
                    previous_generation BIGINT,
                    next_generation BIGINT NOT NULL,
                    revoked_at BIGINT,
                    revoked_reason TEXT
                );
                CREATE INDEX devices_principal ON devices (principal, enrolled_at);
                CREATE TABLE enrolments (
                    digest BYTEA PRIMARY KEY,
                    principal TEXT NOT NULL,
                    role TEXT NOT NULL,
                    workspaces TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    created_by TEXT NOT NULL,
                    device_id TEXT,
                    installation TEXT,
                    used_at BIGINT
                );
                ALTER TABLE grants ADD COLUMN device_id TEXT;
                ALTER TABLE grants ADD COLUMN generation BIGINT;
                CREATE INDEX grants_device ON grants (device_id, generation) WHERE device_id IS NOT NULL;
                """),
        // Back-office requests for a device's support bundle, and the bundles devices send.
        Migration(
            version: 5, name: "support requests and bundles",
            sql: """
                CREATE TABLE support_requests (
                    id BIGSERIAL PRIMARY KEY,
                    workspace TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    reason TEXT NOT NULL,
                    requested_by TEXT NOT NULL,
                    requested_at BIGINT NOT NULL,
                    answered_at BIGINT,
                    bundle_id BIGINT
                );
                CREATE INDEX support_requests_open ON support_requests (device_id, id) WHERE answered_at IS NULL;
                CREATE TABLE support_bundles (
                    id BIGSERIAL PRIMARY KEY,
                    workspace TEXT NOT NULL,
                    device_id TEXT,
                    principal TEXT NOT NULL,
                    received_at BIGINT NOT NULL,
                    body BYTEA NOT NULL
                );
                CREATE INDEX support_bundles_device ON support_bundles (workspace, device_id, id);
                """),
        // Every version of documents and records with its author, and reviews. An event's `seq`
        // (its place in the submissions feed) is given after it commits, by the feed's sequencer.
        Migration(
            version: 6, name: "history and reviews",
            sql: """
                CREATE TABLE document_events (
                    id BIGSERIAL PRIMARY KEY,
                    seq BIGINT UNIQUE,
                    workspace TEXT NOT NULL,
                    document_id TEXT NOT NULL,
                    entity_id BIGINT NOT NULL,
                    form TEXT NOT NULL,
                    form_version INTEGER NOT NULL,
                    event TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    payload BYTEA,
                    principal TEXT,
                    device_id TEXT,
                    at BIGINT NOT NULL,
                    captured_at BIGINT,
                    via TEXT NOT NULL,
                    source_document TEXT,
                    verdict TEXT,
                    comment TEXT,
                    issues TEXT,
                    owner TEXT
                );
                CREATE INDEX document_events_document ON document_events (document_id, id);
                CREATE INDEX document_events_feed ON document_events (workspace, seq);
                CREATE INDEX document_events_form ON document_events (workspace, form, seq);
                CREATE INDEX document_events_reviews ON document_events (workspace, owner, seq) WHERE verdict IS NOT NULL;
                CREATE INDEX document_events_unsequenced ON document_events (id) WHERE seq IS NULL;
                INSERT INTO document_events (seq, workspace, document_id, entity_id, form, form_version, event, version, payload, principal, at, via, owner)
                    SELECT row_number() OVER (ORDER BY updated_at, id), workspace, document_id, id, form, form_version,
                        CASE WHEN version = 1 THEN 'accepted' ELSE 'edited' END, version, payload, principal, updated_at, 'submission', principal
                    FROM documents;
                CREATE TABLE record_versions (
                    n BIGSERIAL PRIMARY KEY,
                    workspace TEXT NOT NULL,
                    type TEXT NOT NULL,
                    id BIGINT NOT NULL,
                    version INTEGER NOT NULL,
                    event TEXT NOT NULL,
                    payload BYTEA,
                    principal TEXT,
                    device_id TEXT,
                    at BIGINT NOT NULL,
                    captured_at BIGINT,
                    via TEXT NOT NULL,
                    source_document TEXT
                );
                CREATE INDEX record_versions_record ON record_versions (workspace, type, id, n);
                INSERT INTO record_versions (workspace, type, id, version, event, payload, at, via)
                    SELECT workspace, type, id, version, CASE WHEN version = 1 THEN 'created' ELSE 'edited' END, payload, updated_at, 'back-office'
                    FROM records ORDER BY updated_at;
                """),
        // Receivers of document events and the durable queue of their deliveries.
        Migration(
            version: 7, name: "webhooks",
            sql: """
                CREATE TABLE webhooks (
                    id BIGSERIAL PRIMARY KEY,
                    workspace TEXT NOT NULL,
                    url TEXT NOT NULL,
                    events TEXT NOT NULL,
                    forms TEXT NOT NULL,
                    secret TEXT NOT NULL,
                    previous_secret TEXT,
                    previous_until BIGINT,
                    created_by TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    cursor BIGINT NOT NULL
                );
                CREATE TABLE webhook_deliveries (
                    id BIGSERIAL PRIMARY KEY,
                    webhook_id BIGINT NOT NULL,
                    event_id BIGINT NOT NULL,
                    seq BIGINT NOT NULL,
                    document_id TEXT NOT NULL,
                    event TEXT NOT NULL,
                    state TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    first_attempt_at BIGINT,
                    last_attempt_at BIGINT,
                    next_attempt_at BIGINT NOT NULL,
                    claimed_until BIGINT NOT NULL DEFAULT 0,
                    last_status BIGINT,
                    last_error TEXT,
                    delivered_at BIGINT,
                    UNIQUE (webhook_id, event_id)
                );
                CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
                CREATE INDEX webhook_deliveries_document ON webhook_deliveries (webhook_id, document_id, seq) WHERE state = 'pending';
                CREATE INDEX webhook_deliveries_list ON webhook_deliveries (webhook_id, state, id);
                """),
        // The records a document's lists created, item by item.
        Migration(
            version: 8, name: "records a document's lists created",
            sql: """
                CREATE TABLE document_records (
                    document_id TEXT NOT NULL,
                    list TEXT NOT NULL,
                    position INTEGER NOT NULL,
                    type TEXT NOT NULL,
                    record_id BIGINT NOT NULL,
                    PRIMARY KEY (document_id, list, position)
                );
                """),
        // The feed's end across workspaces (`MAX(seq)`), read by every sequencer pass and by
        // the feeds' cursor checks: without these, each read scanned every event or change.
        Migration(
            version: 9, name: "the feeds' ends",
            sql: """
                CREATE INDEX document_events_seq ON document_events (seq);
                CREATE INDEX changes_seq ON changes (seq);
                """),
        // The indexes of version 9 repeat the ones `UNIQUE (seq)` made, which answer `MAX(seq)`
        // as well (a backward scan of the index alone); each was written again by every event,
        // change and numbering.
        Migration(
            version: 10, name: "no index twice",
            sql: """
                DROP INDEX document_events_seq;
                DROP INDEX changes_seq;
                """),
    ]

    static var latest: Int { migrations.last?.version ?? 0 }

    /// The version `connection`'s database is at (0: empty).
    static func version(_ connection: PostgresConnection) throws -> Int {
        guard try connection.query("SELECT to_regclass('formsync_schema') IS NOT NULL").int(0, 0) == 1 else { return 0 }
        return Int(try connection.query("SELECT COALESCE(MAX(version), 0) FROM formsync_schema").int(0, 0) ?? 0)
    }

    /// Applies the migrations the database lacks, each in its own transaction, holding the
    /// migration lock; returns how many this call applied (0 when another node did them).
    @discardableResult
    static func migrate(_ connection: PostgresConnection, now: Int64) throws -> Int {
        try connection.query("SELECT pg_advisory_lock($1)", [.integer(migrationLock)])
        defer { _ = try? connection.query("SELECT pg_advisory_unlock($1)", [.integer(migrationLock)]) }
        try connection.run(
            "CREATE TABLE IF NOT EXISTS formsync_schema (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)")
        let found = try version(connection)
        guard found <= latest else { throw Mismatch(found: found, known: latest) }
        var applied = 0
        for migration in migrations where migration.version > found {
            try connection.run("BEGIN")
            do {
                try connection.run(migration.sql)
                try connection.query(
                    "INSERT INTO formsync_schema (version, name, applied_at) VALUES ($1, $2, $3)",
                    [.integer(Int64(migration.version)), .text(migration.name), .integer(now)])
                try connection.run("COMMIT")
            } catch {
                try? connection.run("ROLLBACK")
                throw error
            }
            applied += 1
        }
        return applied
    }

    /// Throws unless the database is at exactly the version this build knows.
    static func check(_ connection: PostgresConnection) throws {
        let found = try version(connection)
        guard found == latest else { throw Mismatch(found: found, known: latest) }
    }
}
