import FormSyncSQLite

/// Every version of the outbox's schema, oldest first. A file is migrated in one transaction per
/// version at open; a file of a newer version than `all` knows is refused, never touched.
enum OutboxMigrations {
    static let all = SQLiteMigrator(migrations: [
        outbox,
        workspaceWalls,
        records,
        attempts,
        tombstones,
        leasedIndex,
        leanItems,
        resolvedByServerID,
        recordKeys,
        deferredFiles,
        revocation,
        people,
        reviews,
        drafts,
        itemRecords,
        subscriptions,
    ])

    static let outbox = SQLiteMigrator.Migration(
        version: 1, name: "outbox",
        sql: """
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
            """)

    static let workspaceWalls = SQLiteMigrator.Migration(
        version: 2, name: "workspace walls, sends, documents",
        sql: """
            CREATE TABLE resolved_by_workspace (
                workspace TEXT NOT NULL,
                placeholder INTEGER NOT NULL,
                server_id INTEGER NOT NULL,
                PRIMARY KEY (workspace, placeholder)
            ) WITHOUT ROWID;
            INSERT INTO resolved_by_workspace (workspace, placeholder, server_id)
                SELECT COALESCE((SELECT workspace FROM items WHERE produces = r.placeholder), ''), r.placeholder, r.server_id
                FROM resolved r;
            DROP TABLE resolved;
            ALTER TABLE resolved_by_workspace RENAME TO resolved;
            ALTER TABLE items ADD COLUMN sends INTEGER NOT NULL DEFAULT 0;
            CREATE TABLE documents (
                workspace TEXT NOT NULL,
                document_id TEXT NOT NULL,
                digest BLOB NOT NULL,
                item_id INTEGER NOT NULL,
                PRIMARY KEY (workspace, document_id, digest)
            ) WITHOUT ROWID;
            INSERT OR IGNORE INTO documents (workspace, document_id, digest, item_id)
                SELECT workspace, document_id, randomblob(32), id FROM items WHERE kind = 'submission';
            CREATE INDEX items_file ON items(file_path) WHERE file_path IS NOT NULL;
            DROP INDEX items_attempt;
            """)

    static let records = SQLiteMigrator.Migration(
        version: 3, name: "records",
        sql: """
            CREATE TABLE records (
                workspace TEXT NOT NULL,
                type TEXT NOT NULL,
                id INTEGER NOT NULL,
                version INTEGER NOT NULL,
                payload BLOB NOT NULL,
                PRIMARY KEY (workspace, type, id)
            ) WITHOUT ROWID;
            CREATE TABLE record_index (
                workspace TEXT NOT NULL,
                type TEXT NOT NULL,
                field TEXT NOT NULL,
                value TEXT NOT NULL,
                id INTEGER NOT NULL,
                PRIMARY KEY (workspace, type, field, value, id)
            ) WITHOUT ROWID;
            CREATE TABLE pull_cursors (workspace TEXT PRIMARY KEY, cursor TEXT NOT NULL, pulled_at INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE record_index_fields (type TEXT PRIMARY KEY, fields TEXT NOT NULL) WITHOUT ROWID;
            """)

    static let attempts = SQLiteMigrator.Migration(
        version: 4, name: "attempt history",
        sql: """
            CREATE TABLE attempts (
                item_id INTEGER NOT NULL,
                at INTEGER NOT NULL,
                outcome TEXT NOT NULL,
                status INTEGER,
                reason TEXT,
                milliseconds INTEGER NOT NULL
            );
            CREATE INDEX attempts_item ON attempts(item_id);
            """)

    /// Records the feed said are gone from this device's view (deleted, or moved to another
    /// scope): an acknowledgement replayed later (a reply lost after commit, answered again by
    /// the server's ledger) carries the record as it was then and must not bring it back. Only
    /// the feed, which is in commit order, puts such a record back.
    static let tombstones = SQLiteMigrator.Migration(
        version: 5, name: "record tombstones",
        sql: """
            CREATE TABLE record_tombstones (
                workspace TEXT NOT NULL,
                type TEXT NOT NULL,
                id INTEGER NOT NULL,
                PRIMARY KEY (workspace, type, id)
            ) WITHOUT ROWID;
            """)

    /// Leased items, found without reading the table: the lease reclaim at open used to scan
    /// every row (100,000 queued 2 KB items: 400 MB) to learn that nothing was leased.
    static let leasedIndex = SQLiteMigrator.Migration(
        version: 6, name: "leased items index",
        sql: """
            CREATE INDEX items_leased ON items(lease_expires_at) WHERE state = 'leased';
            """)

    /// A lean `items` table: what an enqueue writes besides its own row was most of its cost.
    /// Each commit goes to the log page by page, and one 2 KB order touched about nine pages
    /// against a bare row's two. Gone: `AUTOINCREMENT` (a `sqlite_sequence` page per insert;
    /// ids still never come back, see `lastItemIDCounter`), the index entry every item without
    /// a placeholder made in `produces`' unique index (now partial), and the `items_state` entry
    /// of open items, which `items_open` already lists (and now covers with `state`, so counting
    /// them reads no payload). Large columns go last, so that reading an item's state never walks
    /// a payload's overflow pages. `dependencies` is rebuilt beside it: with foreign keys on,
    /// dropping the old `items` would otherwise cascade into it.
    static let leanItems = SQLiteMigrator.Migration(
        version: 7, name: "lean items",
        sql: """
            CREATE TABLE outbox_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
            INSERT INTO outbox_counters (name, value) SELECT 'items', seq FROM sqlite_sequence WHERE name = 'items';
            CREATE TABLE items_lean (
                id INTEGER PRIMARY KEY,
                kind TEXT NOT NULL,
                workspace TEXT NOT NULL,
                lane TEXT NOT NULL,
                state TEXT NOT NULL,
                document_id TEXT NOT NULL,
                attempt_id TEXT NOT NULL,
                form TEXT,
                form_version INTEGER,
                endpoint TEXT,
                base_version TEXT,
                produces INTEGER,
                server_id INTEGER,
                server_version TEXT,
                file_path TEXT,
                content_type TEXT,
                byte_count INTEGER,
                sha256 BLOB,
                attempts INTEGER NOT NULL DEFAULT 0,
                sends INTEGER NOT NULL DEFAULT 0,
                next_attempt_at INTEGER NOT NULL,
                lease_expires_at INTEGER,
                last_error TEXT,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                field_errors BLOB,
                conflicts BLOB,
                base_payload BLOB,
                server_payload BLOB,
                payload BLOB
            );
            INSERT INTO items_lean (
                id, kind, workspace, lane, state, document_id, attempt_id, form, form_version, endpoint, base_version, produces,
                server_id, server_version, file_path, content_type, byte_count, sha256, attempts, sends, next_attempt_at,
                lease_expires_at, last_error, created_at, updated_at, field_errors, conflicts, base_payload, server_payload, payload)
            SELECT
                id, kind, workspace, lane, state, document_id, attempt_id, form, form_version, endpoint, base_version, produces,
                server_id, server_version, file_path, content_type, byte_count, sha256, attempts, sends, next_attempt_at,
                lease_expires_at, last_error, created_at, updated_at, field_errors, conflicts, base_payload, server_payload, payload
            FROM items ORDER BY id;
            CREATE TEMP TABLE dependencies_kept AS SELECT item_id, placeholder FROM dependencies;
            DROP TABLE dependencies;
            DROP TABLE items;
            ALTER TABLE items_lean RENAME TO items;
            CREATE TABLE dependencies (
                item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
                placeholder INTEGER NOT NULL,
                PRIMARY KEY (item_id, placeholder)
            ) WITHOUT ROWID;
            INSERT INTO dependencies (item_id, placeholder) SELECT item_id, placeholder FROM temp.dependencies_kept;
            DROP TABLE temp.dependencies_kept;
            CREATE INDEX dependencies_placeholder ON dependencies(placeholder);
            CREATE INDEX items_open ON items(workspace, lane, id, state) WHERE state IN ('pending', 'leased');
            CREATE INDEX items_state ON items(workspace, state, id) WHERE state NOT IN ('pending', 'leased');
            CREATE UNIQUE INDEX items_produces ON items(produces) WHERE produces IS NOT NULL;
            CREATE INDEX items_file ON items(file_path) WHERE file_path IS NOT NULL;
            CREATE INDEX items_leased ON items(lease_expires_at) WHERE state = 'leased';
            """)

    /// A landed record's placeholder, found by its server id (one lane per entity).
    static let resolvedByServerID = SQLiteMigrator.Migration(
        version: 8, name: "resolved by server id", sql: "CREATE INDEX resolved_server ON resolved(workspace, server_id);")

    /// A record's indexed values become columns of its row (`key1` … `key8`, the type's
    /// indexed fields in spec order) with SQLite's own partial indexes, instead of rows of
    /// `record_index`: a pulled record is one insert, and an initial pull can build the indexes
    /// once at its end. The keys are filled from the stored records at the next open (the
    /// emptied `record_index_fields` makes every type's index look changed).
    static let recordKeys = SQLiteMigrator.Migration(
        version: 9, name: "record keys",
        sql: """
            ALTER TABLE records ADD COLUMN key1 TEXT;
            ALTER TABLE records ADD COLUMN key2 TEXT;
            ALTER TABLE records ADD COLUMN key3 TEXT;
            ALTER TABLE records ADD COLUMN key4 TEXT;
            ALTER TABLE records ADD COLUMN key5 TEXT;
            ALTER TABLE records ADD COLUMN key6 TEXT;
            ALTER TABLE records ADD COLUMN key7 TEXT;
            ALTER TABLE records ADD COLUMN key8 TEXT;
            DROP TABLE record_index;
            DELETE FROM record_index_fields;
            CREATE INDEX records_key1 ON records(workspace, type, key1) WHERE key1 IS NOT NULL;
            CREATE INDEX records_key2 ON records(workspace, type, key2) WHERE key2 IS NOT NULL;
            CREATE INDEX records_key3 ON records(workspace, type, key3) WHERE key3 IS NOT NULL;
            CREATE INDEX records_key4 ON records(workspace, type, key4) WHERE key4 IS NOT NULL;
            CREATE INDEX records_key5 ON records(workspace, type, key5) WHERE key5 IS NOT NULL;
            CREATE INDEX records_key6 ON records(workspace, type, key6) WHERE key6 IS NOT NULL;
            CREATE INDEX records_key7 ON records(workspace, type, key7) WHERE key7 IS NOT NULL;
            CREATE INDEX records_key8 ON records(workspace, type, key8) WHERE key8 IS NOT NULL;
            """)

    /// A submission may go before the files it depends on when their fields defer
    /// (`may_defer`) and the server announced deferred files (`outbox_counters`'
    /// `server_defers_files`). An attempt that named a file by digest (`sent_attempt`, with the
    /// digest, size and type it sent) names it so again when it is resent, even once the file
    /// landed: one key, one request. One stashed copy per digest is found by `items_file_digest`.
    /// A file a person sent "now" goes on any network (`any_network`); the file size that waits
    /// for an unmetered network is `outbox_counters`' `metered_file_limit` (none: no limit).
    /// Stored files fetched to the device (`Outbox.file(for:)`) are listed in `cached_files`.
    static let deferredFiles = SQLiteMigrator.Migration(
        version: 10, name: "deferred files",
        sql: """
            ALTER TABLE dependencies ADD COLUMN may_defer INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE dependencies ADD COLUMN sent_attempt TEXT;
            ALTER TABLE dependencies ADD COLUMN sent_sha256 BLOB;
            ALTER TABLE dependencies ADD COLUMN sent_byte_count INTEGER;
            ALTER TABLE dependencies ADD COLUMN sent_content_type TEXT;
            CREATE INDEX items_file_digest ON items(workspace, sha256) WHERE kind = 'file' AND file_path IS NOT NULL;
            CREATE TABLE any_network (item_id INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE);
            CREATE TABLE cached_files (
                workspace TEXT NOT NULL,
                file_id INTEGER NOT NULL,
                byte_count INTEGER NOT NULL,
                sha256 BLOB NOT NULL,
                used_at INTEGER NOT NULL,
                PRIMARY KEY (workspace, file_id)
            ) WITHOUT ROWID;
            CREATE INDEX cached_files_used ON cached_files(used_at);
            """)

    /// The server revoked the device's credentials (`Outbox.deviceRevoked`): when and why. While
    /// the row is there nothing is sent; the items it sealed stay `sealed` for good.
    static let revocation = SQLiteMigrator.Migration(
        version: 11, name: "revocation",
        sql: """
            CREATE TABLE revocation (id INTEGER PRIMARY KEY CHECK (id = 1), reason TEXT NOT NULL, revoked_at INTEGER NOT NULL);
            """)

    /// Shared phones: who captured each item (`item_owners`, only for items captured while a
    /// person was signed in, so a device without people pays nothing for it), who is signed in
    /// (`people`: `present` while the person's credential is on the device, `current` for the
    /// one capturing now, `revoked_reason` once the server revoked their credential: their
    /// items are sealed, now and whenever one comes back from the wire), and every hand-over a person made (`handovers`). The pulled records,
    /// their tombstones, the feed's cursors and the fetched files are kept per view (the
    /// workspace, or the workspace and the person: `RecordView`), so that each person sees
    /// only their own and switching back re-pulls nothing.
    static let people = SQLiteMigrator.Migration(
        version: 12, name: "people",
        sql: """
            CREATE TABLE item_owners (
                item_id INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
                principal TEXT NOT NULL
            );
            CREATE TABLE people (
                principal TEXT PRIMARY KEY,
                present INTEGER NOT NULL,
                current INTEGER NOT NULL DEFAULT 0,
                revoked_reason TEXT
            ) WITHOUT ROWID;
            CREATE TABLE handovers (
                item_id INTEGER NOT NULL,
                from_principal TEXT,
                to_principal TEXT NOT NULL,
                by_principal TEXT NOT NULL,
                at INTEGER NOT NULL
            );
            CREATE INDEX handovers_item ON handovers(item_id);
            ALTER TABLE records RENAME COLUMN workspace TO view;
            ALTER TABLE record_tombstones RENAME COLUMN workspace TO view;
            ALTER TABLE pull_cursors RENAME COLUMN workspace TO view;
            ALTER TABLE cached_files RENAME COLUMN workspace TO view;
            """)

    /// The back office's reviews of the documents this device sent (`Review`), kept with the page
    /// of the feed that brought them, per view, and acted on after it commits (`applied_at`):
    /// a document that has issues reopens the item that sent it (`item_id`). A review kept here
    /// is acted on once, even when a reset feed brings it again. An item's `last_change`: who made
    /// the server's version a conflict met (`ChangeAuthor`, from the reply's `last_change`).
    static let reviews = SQLiteMigrator.Migration(
        version: 13, name: "reviews",
        sql: """
            CREATE TABLE reviews (
                view TEXT NOT NULL,
                id INTEGER NOT NULL,
                document_id TEXT NOT NULL,
                body BLOB NOT NULL,
                received_at INTEGER NOT NULL,
                applied_at INTEGER,
                item_id INTEGER,
                PRIMARY KEY (view, id)
            ) WITHOUT ROWID;
            CREATE INDEX reviews_waiting ON reviews(received_at) WHERE applied_at IS NULL;
            CREATE INDEX reviews_document ON reviews(document_id);
            ALTER TABLE items ADD COLUMN last_change BLOB;
            """)

    /// Drafts: a form half filled (`drafts`, per view, its payload as saved, complete or not) and
    /// the files attached to it (`draft_files`, their durable copies in the stash), until the
    /// draft is submitted or discarded.
    static let drafts = SQLiteMigrator.Migration(
        version: 14, name: "drafts",
        sql: """
            CREATE TABLE drafts (
                id TEXT PRIMARY KEY,
                view TEXT NOT NULL,
                form TEXT NOT NULL,
                form_version INTEGER NOT NULL,
                document_id TEXT NOT NULL,
                payload BLOB NOT NULL,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE INDEX drafts_view ON drafts(view, updated_at);
            CREATE TABLE draft_files (
                draft_id TEXT NOT NULL,
                placeholder INTEGER NOT NULL,
                path TEXT NOT NULL,
                content_type TEXT,
                byte_count INTEGER NOT NULL,
                sha256 BLOB NOT NULL,
                PRIMARY KEY (draft_id, placeholder)
            ) WITHOUT ROWID;
            CREATE INDEX draft_files_path ON draft_files(path);
            """)

    /// The placeholders of the records a submission's lists create, one per item.
    static let itemRecords = SQLiteMigrator.Migration(
        version: 15, name: "item records",
        sql: """
            CREATE TABLE item_records (
                placeholder INTEGER PRIMARY KEY,
                item_id INTEGER NOT NULL,
                type TEXT NOT NULL,
                list TEXT NOT NULL,
                position INTEGER NOT NULL
            );
            CREATE INDEX item_records_item ON item_records(item_id, list, position);
            """)

    /// The subscriptions each person holds, with their feeds' cursors, and which records each
    /// brought (a record no subscription holds is evicted).
    static let subscriptions = SQLiteMigrator.Migration(
        version: 16, name: "subscriptions",
        sql: """
            CREATE TABLE subscriptions (
                view TEXT NOT NULL,
                name TEXT NOT NULL,
                type TEXT NOT NULL,
                query TEXT NOT NULL,
                priority INTEGER NOT NULL,
                expires_at INTEGER NOT NULL,
                cursor TEXT,
                PRIMARY KEY (view, name)
            );
            CREATE TABLE subscription_records (
                view TEXT NOT NULL,
                name TEXT NOT NULL,
                type TEXT NOT NULL,
                id INTEGER NOT NULL,
                PRIMARY KEY (view, name, type, id)
            );
            CREATE INDEX subscription_records_record ON subscription_records(view, type, id);
            """)
}
