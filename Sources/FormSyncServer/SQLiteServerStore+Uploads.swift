import FormSyncModel
import FormSyncSQLite
import Foundation

/// Resumable uploads (docs/PROTOCOL.md, "Resumable uploads"): one row per upload resource,
/// bound to its file document, with the offset the server holds; the bytes so far in
/// `files/uploads/<id>.part`. The offset is written after the bytes are synced, so it never
/// claims bytes the disk does not hold.
extension SQLiteServerStore {
    private static let uploadColumns = "upload_id, document_id, workspace, length, offset, digest, content_type, file_id, principal"

    private static func upload(_ row: SQLiteConnection.Row) -> StoredUpload {
        StoredUpload(
            uploadID: row.text(0) ?? "", documentID: row.text(1) ?? "", workspace: row.text(2) ?? "", length: row.int(3),
            offset: row.int(4),
            digest: row.blob(5) ?? Data(), contentType: row.text(6), fileID: row.optionalInt(7), principal: row.text(8))
    }

    func upload(id: String) throws -> StoredUpload? {
        try db.query("SELECT \(Self.uploadColumns) FROM uploads WHERE upload_id = ?", [.text(id)], Self.upload).first
    }

    func upload(document documentID: String) throws -> StoredUpload? {
        try db.query("SELECT \(Self.uploadColumns) FROM uploads WHERE document_id = ?", [.text(documentID)], Self.upload).first
    }

    func createUpload(_ upload: StoredUpload, at now: Int64) throws {
        try blobs.createPart(upload.uploadID)
        try transaction { try insertUpload(upload, at: now) }
    }

    private func insertUpload(_ upload: StoredUpload, at now: Int64) throws {
        try db.run(
            """
            INSERT INTO uploads (upload_id, document_id, workspace, principal, length, offset, digest, content_type, created_at, touched_at)
            VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?)
            """,
            [
                .text(upload.uploadID), .text(upload.documentID), .text(upload.workspace), upload.principal.map(SQLValue.text) ?? .null,
                .integer(upload.length),
                .blob(upload.digest), upload.contentType.map(SQLValue.text) ?? .null, .integer(now), .integer(now),
            ])
    }

    func setUploadOffset(_ id: String, _ offset: Int64, at now: Int64) throws {
        try db.run("UPDATE uploads SET offset = ?, touched_at = ? WHERE upload_id = ?", [.integer(offset), .integer(now), .text(id)])
    }

    /// Unfinished uploads and the bytes they announced, of one principal and of one workspace.
    func unfinishedUploads(principal: String, workspace: String) throws -> (count: Int64, bytes: Int64, workspaceBytes: Int64) {
        let mine =
            try db.query(
                "SELECT COUNT(*), COALESCE(SUM(length), 0) FROM uploads WHERE file_id IS NULL AND workspace = ? AND principal = ?",
                [.text(workspace), .text(principal)], { ($0.int(0), $0.int(1)) }
            ).first ?? (0, 0)
        let all =
            try db.query(
                "SELECT COALESCE(SUM(length), 0) FROM uploads WHERE file_id IS NULL AND workspace = ?", [.text(workspace)], { $0.int(0) }
            ).first ?? 0
        return (mine.0, mine.1, all)
    }

    /// Removes up to `limit` unfinished uploads not appended to since `cutoff`, row and bytes;
    /// returns how many went.
    @discardableResult
    func expireUploads(before cutoff: Int64, limit: Int) throws -> Int {
        let stale = try db.query(
            "SELECT upload_id FROM uploads WHERE file_id IS NULL AND touched_at < ? ORDER BY touched_at LIMIT ?",
            [.integer(cutoff), .integer(Int64(limit))],
            { $0.text(0) ?? "" })
        for id in stale {
            _ = try transaction { try db.run("DELETE FROM uploads WHERE upload_id = ?", [.text(id)]) }
            blobs.removePart(id)
        }
        return stale.count
    }

    func claimAppend(_ uploadID: String, at now: Int64) throws -> Bool {
        appending.withLock { $0.insert(uploadID).inserted }
    }

    func releaseAppend(_ uploadID: String) {
        _ = appending.withLock { $0.remove(uploadID) }
    }

    /// The bytes are written and synced outside the lock, so that a large append never holds
    /// up other requests; the offset moves only once they are on disk.
    func appendUpload(_ uploadID: String, bytes: Data, at offset: Int64, now: Int64) throws {
        guard !bytes.isEmpty else { return }
        try blobs.append(bytes, toPart: uploadID, at: offset)
        try exclusive { try transaction { try setUploadOffset(uploadID, offset + Int64(bytes.count), at: now) } }
    }

    func uploadDigest(_ uploadID: String) throws -> Data {
        try blobs.digest(ofPart: uploadID)
    }

    func restartUpload(_ uploadID: String, at now: Int64) throws {
        try transaction { try setUploadOffset(uploadID, 0, at: now) }
    }

    func completeUpload(_ upload: StoredUpload, digest: Data, mediaType: String, principal: String, at now: Int64) throws -> Int64 {
        let id = try adoptFile(
            upload.documentID, workspace: upload.workspace, principal: principal, part: upload.uploadID, digest: digest,
            byteCount: upload.length, contentType: upload.contentType, mediaType: mediaType, at: now)
        try finishUpload(upload.uploadID, fileID: id)
        return id
    }

    func finishUpload(_ id: String, fileID: Int64) throws {
        try db.run("UPDATE uploads SET file_id = ? WHERE upload_id = ?", [.integer(fileID), .text(id)])
    }

    func uploadPrefix(_ uploadID: String) throws -> Data {
        try blobs.prefix(ofPart: uploadID)
    }

    /// Makes the finished upload's bytes a stored file of `documentID` (moved, not copied).
    func adoptFile(
        _ documentID: String, workspace: String, principal: String, part: String, digest: Data, byteCount: Int64, contentType: String?,
        mediaType: String, at now: Int64
    ) throws -> Int64 {
        try blobs.adoptPart(part, digest: digest)
        return try insertFile(
            documentID, workspace: workspace, principal: principal, digest: digest, contentType: contentType, mediaType: mediaType,
            byteCount: byteCount, at: now)
    }
}
