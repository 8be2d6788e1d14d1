import FormSyncSQLite
import Foundation

/// The attachment cache's index: which stored files are on the device, their size and digest,
/// and when each was last used (for least-recently-used eviction).
extension OutboxStore {
    func cachedFile(workspace: String, id: Int64) throws -> (byteCount: Int64, sha256: Data)? {
        try db.query("SELECT byte_count, sha256 FROM cached_files WHERE workspace = ? AND file_id = ?", [.text(workspace), .integer(id)]) {
            ($0.int(0), $0.blob(1) ?? Data())
        }.first
    }

    func noteCachedFile(workspace: String, id: Int64, byteCount: Int64, sha256: Data, usedAt: Int64) throws {
        try db.run(
            "INSERT OR REPLACE INTO cached_files (workspace, file_id, byte_count, sha256, used_at) VALUES (?, ?, ?, ?, ?)",
            [.text(workspace), .integer(id), .integer(byteCount), .blob(sha256), .integer(usedAt)])
    }

    func touchCachedFile(workspace: String, id: Int64, usedAt: Int64) throws {
        try db.run(
            "UPDATE cached_files SET used_at = ? WHERE workspace = ? AND file_id = ?", [.integer(usedAt), .text(workspace), .integer(id)])
    }

    func removeCachedFile(workspace: String, id: Int64) throws {
        try db.run("DELETE FROM cached_files WHERE workspace = ? AND file_id = ?", [.text(workspace), .integer(id)])
    }

    /// Every cached file, least recently used first, and the bytes they hold in all.
    func cachedFiles() throws -> (files: [(workspace: String, id: Int64, byteCount: Int64)], bytes: Int64) {
        let files = try db.query("SELECT workspace, file_id, byte_count FROM cached_files ORDER BY used_at, file_id") {
            ($0.text(0) ?? "", $0.int(1), $0.int(2))
        }
        return (files, files.reduce(0) { $0.addingClamped($1.2) })
    }
}
