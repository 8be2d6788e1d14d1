import FormSyncModel
import FormSyncServer
import Foundation

/// Resumable uploads on PostgreSQL: each append is a row of `upload_parts` written in the same
/// transaction as the offset that counts it, so any node continues an upload another began.
/// A finished upload's parts become the file's chunks in `blobs` (once per digest).
extension PostgresServerStore {
    private static let uploadColumns = "upload_id, document_id, workspace, length, \"offset\", digest, content_type, file_id, principal"

    private static func upload(_ rows: PostgresRows) -> StoredUpload? {
        guard rows.count == 1 else { return nil }
        return StoredUpload(
            uploadID: rows.text(0, 0) ?? "", documentID: rows.text(0, 1) ?? "", workspace: rows.text(0, 2) ?? "",
            length: rows.int(0, 3) ?? 0,
            offset: rows.int(0, 4) ?? 0, digest: rows.bytes(0, 5) ?? Data(), contentType: rows.text(0, 6), fileID: rows.int(0, 7),
            principal: rows.text(0, 8))
    }

    package func upload(id: String) throws -> StoredUpload? {
        Self.upload(try query("SELECT \(Self.uploadColumns) FROM uploads WHERE upload_id = $1", [.text(id)]))
    }

    package func upload(document documentID: String) throws -> StoredUpload? {
        Self.upload(try query("SELECT \(Self.uploadColumns) FROM uploads WHERE document_id = $1", [.text(documentID)]))
    }

    package func createUpload(_ upload: StoredUpload, at now: Int64) throws {
        forgetMissingOwner(upload.documentID)
        try query(
            """
            INSERT INTO uploads (upload_id, document_id, workspace, principal, length, "offset", digest, content_type, created_at, touched_at)
            VALUES ($1, $2, $3, $4, $5, 0, $6, $7, $8, $8)
            """,
            [
                .text(upload.uploadID), .text(upload.documentID), .text(upload.workspace),
                upload.principal.map(PostgresValue.text) ?? .null,
                .integer(upload.length), .bytes(upload.digest), upload.contentType.map(PostgresValue.text) ?? .null, .integer(now),
            ])
    }

    /// One append at a time per upload, on every node: a session advisory lock on a connection
    /// held for the append. A node that dies mid-append loses its connections, and PostgreSQL
    /// releases the lock at once (a lease in a row would hold the upload until it expired).
    package func claimAppend(_ uploadID: String, at now: Int64) throws -> Bool {
        let connection = try pool.checkOut()
        let granted: Bool
        do {
            granted = try connection.query("SELECT pg_try_advisory_lock(hashtextextended($1, 7))", [.text(uploadID)]).int(0, 0) == 1
        } catch {
            pool.checkIn(connection)
            throw error
        }
        guard granted else {
            pool.checkIn(connection)
            return false
        }
        let previous = appendHolders.withLock { holders in
            defer { holders[uploadID] = connection }
            return holders[uploadID]
        }
        if let previous { pool.checkIn(previous) }
        return true
    }

    package func releaseAppend(_ uploadID: String) {
        guard let connection = appendHolders.withLock({ $0.removeValue(forKey: uploadID) }) else { return }
        _ = try? connection.query("SELECT pg_advisory_unlock(hashtextextended($1, 7))", [.text(uploadID)])
        pool.checkIn(connection)
    }

    package func appendUpload(_ uploadID: String, bytes: Data, at offset: Int64, now: Int64) throws {
        guard !bytes.isEmpty else { return }
        try transaction {
            // Parts past the offset are from an append that never counted: replaced.
            try query("DELETE FROM upload_parts WHERE upload_id = $1 AND start >= $2", [.text(uploadID), .integer(offset)])
            var start = 0
            repeat {
                let end = min(bytes.count, start + Self.chunkBytes)
                try query(
                    "INSERT INTO upload_parts (upload_id, start, bytes) VALUES ($1, $2, $3)",
                    [
                        .text(uploadID), .integer(offset + Int64(start)),
                        .bytes(bytes.subdata(in: bytes.startIndex + start..<bytes.startIndex + end)),
                    ])
                start = end
            } while start < bytes.count
            try query(
                "UPDATE uploads SET \"offset\" = $2, touched_at = $3 WHERE upload_id = $1",
                [.text(uploadID), .integer(offset + Int64(bytes.count)), .integer(now)])
        }
    }

    package func uploadDigest(_ uploadID: String) throws -> Data {
        var hasher = SHA256()
        var next: Int64 = -1
        // One part at a time: memory stays at one part, whatever the file's size.
        while true {
            let rows = try query(
                "SELECT start, bytes FROM upload_parts WHERE upload_id = $1 AND start > $2 ORDER BY start LIMIT 1",
                [.text(uploadID), .integer(next)])
            guard rows.count == 1, let start = rows.int(0, 0) else { break }
            hasher.update(rows.bytes(0, 1) ?? Data())
            next = start
        }
        return hasher.finalize()
    }

    package func restartUpload(_ uploadID: String, at now: Int64) throws {
        try transaction {
            try query("DELETE FROM upload_parts WHERE upload_id = $1", [.text(uploadID)])
            try query("UPDATE uploads SET \"offset\" = 0, touched_at = $2 WHERE upload_id = $1", [.text(uploadID), .integer(now)])
        }
    }

    package func completeUpload(_ upload: StoredUpload, digest: Data, mediaType: String, principal: String, at now: Int64) throws -> Int64 {
        try transaction {
            if try query("SELECT 1 FROM blobs WHERE digest = $1 LIMIT 1", [.bytes(digest)]).count == 0 {
                try query(
                    "INSERT INTO blobs (digest, start, bytes) SELECT $2, start, bytes FROM upload_parts WHERE upload_id = $1 ON CONFLICT DO NOTHING",
                    [.text(upload.uploadID), .bytes(digest)])
            }
            try query("DELETE FROM upload_parts WHERE upload_id = $1", [.text(upload.uploadID)])
            let id = try insertFile(
                upload.documentID, workspace: upload.workspace, principal: principal, digest: digest, contentType: upload.contentType,
                mediaType: mediaType, byteCount: upload.length, at: now)
            try query("UPDATE uploads SET file_id = $2 WHERE upload_id = $1", [.text(upload.uploadID), .integer(id)])
            return id
        }
    }

    package func uploadPrefix(_ uploadID: String) throws -> Data {
        let rows = try query(
            "SELECT substring(bytes FROM 1 FOR $2::INTEGER) FROM upload_parts WHERE upload_id = $1 AND start = 0",
            [.text(uploadID), .integer(Int64(MediaSignature.prefixLength))])
        return rows.count == 1 ? rows.bytes(0, 0) ?? Data() : Data()
    }

    package func unfinishedUploads(principal: String, workspace: String) throws -> (count: Int64, bytes: Int64, workspaceBytes: Int64) {
        let rows = try query(
            """
            SELECT COUNT(*) FILTER (WHERE principal = $2), COALESCE(SUM(length) FILTER (WHERE principal = $2), 0)::BIGINT, COALESCE(SUM(length), 0)::BIGINT
            FROM uploads WHERE file_id IS NULL AND workspace = $1
            """, [.text(workspace), .text(principal)])
        return (rows.int(0, 0) ?? 0, rows.int(0, 1) ?? 0, rows.int(0, 2) ?? 0)
    }

    @discardableResult
    package func expireUploads(before cutoff: Int64, limit: Int) throws -> Int {
        let stale = try query(
            "SELECT upload_id FROM uploads WHERE file_id IS NULL AND touched_at < $1 ORDER BY touched_at LIMIT $2",
            [.integer(cutoff), .integer(Int64(limit))])
        for row in 0..<stale.count {
            let id = stale.text(row, 0) ?? ""
            try transaction {
                try query("DELETE FROM upload_parts WHERE upload_id = $1", [.text(id)])
                try query("DELETE FROM uploads WHERE upload_id = $1 AND file_id IS NULL", [.text(id)])
            }
        }
        return stale.count
    }
}
