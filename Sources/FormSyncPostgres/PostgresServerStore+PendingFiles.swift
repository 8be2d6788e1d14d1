import FormSyncModel
import FormSyncServer
import Foundation

/// Files by digest and the pending files of documents on PostgreSQL (docs/PROTOCOL.md,
/// "Deferred files"). A pending file and the upload that completes it may reach two nodes at
/// once: both take one advisory lock per workspace and digest, so one of them always sees the
/// other's commit.
extension PostgresServerStore {
    private static let fileColumns = "id, workspace, digest, byte_count, content_type, media_type"

    private static func storedFile(_ rows: PostgresRows) -> StoredFile? {
        guard rows.count >= 1 else { return nil }
        return StoredFile(
            id: rows.int(0, 0) ?? 0, workspace: rows.text(0, 1) ?? "", digest: rows.bytes(0, 2) ?? Data(), byteCount: rows.int(0, 3) ?? 0,
            contentType: rows.text(0, 4), mediaType: rows.text(0, 5))
    }

    package func storedFile(id: Int64) throws -> StoredFile? {
        Self.storedFile(try query("SELECT \(Self.fileColumns) FROM files WHERE id = $1", [.integer(id)]))
    }

    package func storedFile(workspace: String, digest: Data) throws -> StoredFile? {
        Self.storedFile(
            try query(
                "SELECT \(Self.fileColumns) FROM files WHERE workspace = $1 AND digest = $2 ORDER BY id LIMIT 1",
                [.text(workspace), .bytes(digest)]))
    }

    package func lockFileDigest(workspace: String, digest: Data) throws {
        let key = SHA256.hash(Data("file:\(workspace):".utf8) + digest).prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
        try query("SELECT pg_advisory_xact_lock($1)", [.integer(key)])
    }

    private static let pendingColumns =
        "document_id, pointer, workspace, principal, digest, byte_count, content_type, accepted, record_type, record_id, created_at"

    private static func pending(_ rows: PostgresRows) -> [PendingFile] {
        (0..<rows.count).map { row in
            PendingFile(
                documentID: rows.text(row, 0) ?? "", pointer: rows.text(row, 1) ?? "", workspace: rows.text(row, 2) ?? "",
                principal: rows.text(row, 3) ?? "",
                digest: rows.bytes(row, 4) ?? Data(), byteCount: rows.int(row, 5) ?? 0, contentType: rows.text(row, 6) ?? "",
                accepted: (rows.text(row, 7) ?? "").split(separator: " ").map(String.init), recordType: rows.text(row, 8),
                recordID: rows.int(row, 9),
                since: rows.int(row, 10) ?? 0)
        }
    }

    package func setPendingFiles(document documentID: String, _ files: [PendingFile]) throws {
        // Nothing here is read back: sent with the transaction's next statement.
        try transaction {
            try pool.with { connection in
                connection.later("DELETE FROM pending_files WHERE document_id = $1", [.text(documentID)])
                for file in files {
                    connection.later(
                        """
                        INSERT INTO pending_files (\(Self.pendingColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                        ON CONFLICT (document_id, pointer) DO NOTHING
                        """,
                        [
                            .text(file.documentID), .text(file.pointer), .text(file.workspace), .text(file.principal), .bytes(file.digest),
                            .integer(file.byteCount),
                            .text(file.contentType), .text(file.accepted.joined(separator: " ")),
                            file.recordType.map(PostgresValue.text) ?? .null,
                            file.recordID.map(PostgresValue.integer) ?? .null, .integer(file.since),
                        ])
                }
            }
        }
    }

    package func pendingFiles(workspace: String, digest: Data) throws -> [PendingFile] {
        Self.pending(
            try query(
                "SELECT \(Self.pendingColumns) FROM pending_files WHERE workspace = $1 AND digest = $2 ORDER BY document_id, pointer",
                [.text(workspace), .bytes(digest)]))
    }

    package func removePendingFile(document documentID: String, pointer: String) throws {
        try query("DELETE FROM pending_files WHERE document_id = $1 AND pointer = $2", [.text(documentID), .text(pointer)])
    }

    package func pendingFiles(workspace: String, principal: String?, limit: Int) throws -> [PendingFile] {
        Self.pending(
            try query(
                """
                SELECT \(Self.pendingColumns) FROM pending_files WHERE workspace = $1 AND ($2::TEXT IS NULL OR principal = $2)
                ORDER BY created_at, document_id, pointer LIMIT $3
                """, [.text(workspace), principal.map(PostgresValue.text) ?? .null, .integer(Int64(limit))]))
    }
}
