import FormSyncModel
import FormSyncSQLite
import Foundation

/// Files by digest and the pending files of documents (docs/PROTOCOL.md, "Deferred files"):
/// what a stored file's bytes say it is, and the references that wait for bytes not yet here.
extension SQLiteServerStore {
    /// Files stored before this version have no signature reading (NULL: not checked).
    private static let fileColumns = "id, workspace, digest, byte_count, content_type, media_type"

    private static func storedFile(_ row: SQLiteConnection.Row) -> StoredFile {
        StoredFile(
            id: row.int(0), workspace: row.text(1) ?? "", digest: row.blob(2) ?? Data(), byteCount: row.int(3), contentType: row.text(4),
            mediaType: row.text(5))
    }

    func storedFile(id: Int64) throws -> StoredFile? {
        try db.query("SELECT \(Self.fileColumns) FROM files WHERE id = ?", [.integer(id)], Self.storedFile).first
    }

    func storedFile(workspace: String, digest: Data) throws -> StoredFile? {
        try db.query(
            "SELECT \(Self.fileColumns) FROM files WHERE workspace = ? AND digest = ? ORDER BY id LIMIT 1",
            [.text(workspace), .blob(digest)], Self.storedFile
        ).first
    }

    private static let pendingColumns =
        "document_id, pointer, workspace, principal, digest, byte_count, content_type, accepted, record_type, record_id, created_at"

    private static func pending(_ row: SQLiteConnection.Row) -> PendingFile {
        PendingFile(
            documentID: row.text(0) ?? "", pointer: row.text(1) ?? "", workspace: row.text(2) ?? "", principal: row.text(3) ?? "",
            digest: row.blob(4) ?? Data(), byteCount: row.int(5), contentType: row.text(6) ?? "",
            accepted: (row.text(7) ?? "").split(separator: " ").map(String.init), recordType: row.text(8), recordID: row.optionalInt(9),
            since: row.int(10))
    }

    func setPendingFiles(document documentID: String, _ files: [PendingFile]) throws {
        try db.run("DELETE FROM pending_files WHERE document_id = ?", [.text(documentID)])
        for file in files {
            try db.run(
                "INSERT OR REPLACE INTO pending_files (\(Self.pendingColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    .text(file.documentID), .text(file.pointer), .text(file.workspace), .text(file.principal), .blob(file.digest),
                    .integer(file.byteCount),
                    .text(file.contentType), .text(file.accepted.joined(separator: " ")), file.recordType.map(SQLValue.text) ?? .null,
                    file.recordID.map(SQLValue.integer) ?? .null, .integer(file.since),
                ])
        }
    }

    func pendingFiles(workspace: String, digest: Data) throws -> [PendingFile] {
        try db.query(
            "SELECT \(Self.pendingColumns) FROM pending_files WHERE workspace = ? AND digest = ? ORDER BY document_id, pointer",
            [.text(workspace), .blob(digest)], Self.pending)
    }

    func removePendingFile(document documentID: String, pointer: String) throws {
        try db.run("DELETE FROM pending_files WHERE document_id = ? AND pointer = ?", [.text(documentID), .text(pointer)])
    }

    func pendingFiles(workspace: String, principal: String?, limit: Int) throws -> [PendingFile] {
        try db.query(
            """
            SELECT \(Self.pendingColumns) FROM pending_files WHERE workspace = ? AND (? IS NULL OR principal = ?)
            ORDER BY created_at, document_id, pointer LIMIT ?
            """, [.text(workspace), principal.map(SQLValue.text) ?? .null, principal.map(SQLValue.text) ?? .null, .integer(Int64(limit))],
            Self.pending)
    }
}

extension SQLiteServerStore {
    /// One process writes at a time here: nothing to lock beyond the unit of work.
    func lockFileDigest(workspace: String, digest: Data) throws {}
}
