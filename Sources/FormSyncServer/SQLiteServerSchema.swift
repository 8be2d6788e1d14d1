import FormSyncSQLite

/// The embedded store's schema (`SQLiteServerStore`), in numbered migrations applied in order
/// when the store opens: the ledger, documents and files (1), workspaces and principals (2),
/// records and the change feed (3), resumable uploads (4), token digests, grants and owners (5),
/// pending files (6), who may read a file (7), devices and enrolments (8), support requests
/// and bundles (9), the history of documents and records (10), webhooks and their
/// deliveries (11), the records a document's lists created (12), and the feed's index holding
/// what a page reads of each change (13).
enum SQLiteServerSchema {
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
        devicesMigration,
        supportMigration,
        historyMigration,
        webhooksMigration,
        documentRecordsMigration,
        feedIndexMigration,
    ])

    static let recordsMigration = SQLiteMigrator.Migration(
        version: 3, name: "records and changes",
        sql: """
            CREATE TABLE records (
                workspace TEXT NOT NULL,
                type TEXT NOT NULL,
                id INTEGER NOT NULL,
                version INTEGER NOT NULL,
                scope TEXT NOT NULL,
                payload BLOB NOT NULL,
                updated_at INTEGER NOT NULL,
                PRIMARY KEY (workspace, type, id)
            ) WITHOUT ROWID;
            CREATE TABLE changes (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                workspace TEXT NOT NULL,
                type TEXT NOT NULL,
                id INTEGER NOT NULL,
                scope TEXT NOT NULL,
                deleted INTEGER NOT NULL,
                UNIQUE (workspace, type, id, scope)
            );
            CREATE INDEX changes_feed ON changes(workspace, seq);
            CREATE INDEX records_id ON records(id);
            """)

    static let uploadsMigration = SQLiteMigrator.Migration(
        version: 4, name: "resumable uploads",
        sql: """
            CREATE TABLE uploads (
                upload_id TEXT PRIMARY KEY,
                document_id TEXT NOT NULL UNIQUE,
                workspace TEXT NOT NULL,
                length INTEGER NOT NULL,
                offset INTEGER NOT NULL,
                digest BLOB NOT NULL,
                content_type TEXT,
                file_id INTEGER,
                created_at INTEGER NOT NULL
            ) WITHOUT ROWID;
            """)

    static let grantsMigration = SQLiteMigrator.Migration(
        version: 5, name: "token digests, grants and owners",
        sql: """
            CREATE TABLE grants (
                digest BLOB PRIMARY KEY,
                kind TEXT NOT NULL,
                principal TEXT NOT NULL,
                role TEXT NOT NULL,
                workspaces TEXT NOT NULL,
                expires_at INTEGER NOT NULL
            ) WITHOUT ROWID;
            DROP TABLE tokens;
            ALTER TABLE documents ADD COLUMN principal TEXT;
            ALTER TABLE files ADD COLUMN principal TEXT;
            ALTER TABLE uploads ADD COLUMN principal TEXT;
            ALTER TABLE uploads ADD COLUMN touched_at INTEGER NOT NULL DEFAULT 0;
            UPDATE uploads SET touched_at = created_at;
            CREATE INDEX uploads_unfinished ON uploads(touched_at) WHERE file_id IS NULL;
            CREATE TABLE id_sequence (next INTEGER NOT NULL);
            INSERT INTO id_sequence SELECT CASE WHEN m >= 9007199254740991 THEN 1 ELSE m + 1 END
                FROM (SELECT MAX(COALESCE((SELECT MAX(id) FROM documents), 0), COALESCE((SELECT MAX(id) FROM records), 0)) AS m);
            """)

    static let pendingFilesMigration = SQLiteMigrator.Migration(
        version: 6, name: "pending files and media types",
        sql: """
            ALTER TABLE files ADD COLUMN media_type TEXT;
            CREATE INDEX files_digest ON files(workspace, digest);
            CREATE TABLE pending_files (
                document_id TEXT NOT NULL,
                pointer TEXT NOT NULL,
                workspace TEXT NOT NULL,
                principal TEXT NOT NULL,
                digest BLOB NOT NULL,
                byte_count INTEGER NOT NULL,
                content_type TEXT NOT NULL,
                accepted TEXT NOT NULL,
                record_type TEXT,
                record_id INTEGER,
                created_at INTEGER NOT NULL,
                PRIMARY KEY (document_id, pointer)
            ) WITHOUT ROWID;
            CREATE INDEX pending_files_digest ON pending_files(workspace, digest);
            CREATE INDEX pending_files_age ON pending_files(workspace, created_at);
            """)

    static let fileAccessMigration = SQLiteMigrator.Migration(
        version: 7, name: "the files records name",
        sql: """
            CREATE TABLE record_files (
                workspace TEXT NOT NULL,
                file_id INTEGER NOT NULL,
                type TEXT NOT NULL,
                id INTEGER NOT NULL,
                PRIMARY KEY (workspace, file_id, type, id)
            ) WITHOUT ROWID;
            CREATE INDEX record_files_record ON record_files(workspace, type, id);
            CREATE TABLE record_files_indexed (done INTEGER NOT NULL);
            """)

    /// Devices, their refresh generations and enrolment codes. Tokens from before keep working:
    /// a refresh token without a device gets one at its first refresh.
    static let devicesMigration = SQLiteMigrator.Migration(
        version: 8, name: "devices and enrolments",
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
                enrolled_at INTEGER NOT NULL,
                last_seen_at INTEGER NOT NULL,
                current_generation INTEGER NOT NULL,
                previous_generation INTEGER,
                next_generation INTEGER NOT NULL,
                revoked_at INTEGER,
                revoked_reason TEXT
            ) WITHOUT ROWID;
            CREATE INDEX devices_principal ON devices(principal, enrolled_at);
            CREATE TABLE enrolments (
                digest BLOB PRIMARY KEY,
                principal TEXT NOT NULL,
                role TEXT NOT NULL,
                workspaces TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                expires_at INTEGER NOT NULL,
                created_by TEXT NOT NULL,
                device_id TEXT,
                installation TEXT,
                used_at INTEGER
            ) WITHOUT ROWID;
            ALTER TABLE grants ADD COLUMN device_id TEXT;
            ALTER TABLE grants ADD COLUMN generation INTEGER;
            CREATE INDEX grants_device ON grants(device_id, generation) WHERE device_id IS NOT NULL;
            """)

    /// Back-office requests for a device's support bundle, and the bundles devices send.
    static let supportMigration = SQLiteMigrator.Migration(
        version: 9, name: "support requests and bundles",
        sql: """
            CREATE TABLE support_requests (
                id INTEGER PRIMARY KEY,
                workspace TEXT NOT NULL,
                device_id TEXT NOT NULL,
                reason TEXT NOT NULL,
                requested_by TEXT NOT NULL,
                requested_at INTEGER NOT NULL,
                answered_at INTEGER,
                bundle_id INTEGER
            );
            CREATE INDEX support_requests_open ON support_requests(device_id, id) WHERE answered_at IS NULL;
            CREATE TABLE support_bundles (
                id INTEGER PRIMARY KEY,
                workspace TEXT NOT NULL,
                device_id TEXT,
                principal TEXT NOT NULL,
                received_at INTEGER NOT NULL,
                body BLOB NOT NULL
            );
            CREATE INDEX support_bundles_device ON support_bundles(workspace, device_id, id);
            """)

    /// Every version of documents and records with its author, and reviews. A document held
    /// before gets one event for the version it is at, by its creator, with no device.
    static let historyMigration = SQLiteMigrator.Migration(
        version: 10, name: "history and reviews",
        sql: """
            CREATE TABLE document_events (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                workspace TEXT NOT NULL,
                document_id TEXT NOT NULL,
                entity_id INTEGER NOT NULL,
                form TEXT NOT NULL,
                form_version INTEGER NOT NULL,
                event TEXT NOT NULL,
                version INTEGER NOT NULL,
                payload BLOB,
                principal TEXT,
                device_id TEXT,
                at INTEGER NOT NULL,
                captured_at INTEGER,
                via TEXT NOT NULL,
                source_document TEXT,
                verdict TEXT,
                comment TEXT,
                issues TEXT,
                owner TEXT
            );
            CREATE INDEX document_events_document ON document_events(document_id, id);
            CREATE INDEX document_events_feed ON document_events(workspace, id);
            CREATE INDEX document_events_form ON document_events(workspace, form, id);
            CREATE INDEX document_events_reviews ON document_events(workspace, owner, id) WHERE verdict IS NOT NULL;
            INSERT INTO document_events (workspace, document_id, entity_id, form, form_version, event, version, payload, principal, at, via, owner)
                SELECT workspace, document_id, id, form, form_version, CASE WHEN version = 1 THEN 'accepted' ELSE 'edited' END, version,
                    payload, principal, updated_at, 'submission', principal
                FROM documents ORDER BY updated_at, id;
            CREATE TABLE record_versions (
                n INTEGER PRIMARY KEY AUTOINCREMENT,
                workspace TEXT NOT NULL,
                type TEXT NOT NULL,
                id INTEGER NOT NULL,
                version INTEGER NOT NULL,
                event TEXT NOT NULL,
                payload BLOB,
                principal TEXT,
                device_id TEXT,
                at INTEGER NOT NULL,
                captured_at INTEGER,
                via TEXT NOT NULL,
                source_document TEXT
            );
            CREATE INDEX record_versions_record ON record_versions(workspace, type, id, n);
            INSERT INTO record_versions (workspace, type, id, version, event, payload, at, via)
                SELECT workspace, type, id, version, CASE WHEN version = 1 THEN 'created' ELSE 'edited' END, payload, updated_at, 'back-office'
                FROM records ORDER BY updated_at;
            """)

    /// Receivers of document events and the durable queue of their deliveries.
    static let webhooksMigration = SQLiteMigrator.Migration(
        version: 11, name: "webhooks",
        sql: """
            CREATE TABLE webhooks (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                workspace TEXT NOT NULL,
                url TEXT NOT NULL,
                events TEXT NOT NULL,
                forms TEXT NOT NULL,
                secret TEXT NOT NULL,
                previous_secret TEXT,
                previous_until INTEGER,
                created_by TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                cursor INTEGER NOT NULL
            );
            CREATE TABLE webhook_deliveries (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                webhook_id INTEGER NOT NULL,
                event_id INTEGER NOT NULL,
                seq INTEGER NOT NULL,
                document_id TEXT NOT NULL,
                event TEXT NOT NULL,
                state TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                first_attempt_at INTEGER,
                last_attempt_at INTEGER,
                next_attempt_at INTEGER NOT NULL,
                claimed_until INTEGER NOT NULL DEFAULT 0,
                last_status INTEGER,
                last_error TEXT,
                delivered_at INTEGER,
                UNIQUE (webhook_id, event_id)
            );
            CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE state = 'pending';
            CREATE INDEX webhook_deliveries_document ON webhook_deliveries(webhook_id, document_id, seq) WHERE state = 'pending';
            CREATE INDEX webhook_deliveries_list ON webhook_deliveries(webhook_id, state, id);
            """)

    /// The records a document's lists created, item by item, so that a repeat of the
    /// submission is answered with the same records.
    static let documentRecordsMigration = SQLiteMigrator.Migration(
        version: 12, name: "records a document's lists created",
        sql: """
            CREATE TABLE document_records (
                document_id TEXT NOT NULL,
                list TEXT NOT NULL,
                position INTEGER NOT NULL,
                type TEXT NOT NULL,
                record_id INTEGER NOT NULL,
                PRIMARY KEY (document_id, list, position)
            ) WITHOUT ROWID;
            """)

    /// The feed's index holds each change's scope, type, id and whether it is a deletion: a
    /// page, and the count of what remains after it (a new device's first page counts its whole
    /// scope), read the index alone, without a look-up of each change's row.
    static let feedIndexMigration = SQLiteMigrator.Migration(
        version: 13, name: "the feed's covering index",
        sql: """
            DROP INDEX changes_feed;
            CREATE INDEX changes_feed ON changes(workspace, seq, scope, type, id, deleted);
            """)
}
