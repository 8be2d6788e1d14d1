import FormSyncSQLite
import Foundation

/// The attachment cache's index: which stored files are on the device, their size and digest,
/// and when each was last used (for least-recently-used eviction).
extension OutboxStore {
    func cachedFile(view: String, id: Int64) throws -> (byteCount: Int64, sha256: Data)? {
        try db.query("SELECT byte_count, sha256 FROM cached_files WHERE view = ? AND file_id = ?", [.text(view), .integer(id)]) {
            ($0.int(0), $0.blob(1) ?? Data())
        }.first
    }

    func noteCachedFile(view: String, id: Int64, byteCount: Int64, sha256: Data, usedAt: Int64) throws {
        try db.run(
            "INSERT OR REPLACE INTO cached_files (view, file_id, byte_count, sha256, used_at) VALUES (?, ?, ?, ?, ?)",
            [.text(view), .integer(id), .integer(byteCount), .blob(sha256), .integer(usedAt)])
    }

    func touchCachedFile(view: String, id: Int64, usedAt: Int64) throws {
        try db.run(
            "UPDATE cached_files SET used_at = ? WHERE view = ? AND file_id = ?", [.integer(usedAt), .text(view), .integer(id)])
    }

    func removeCachedFile(view: String, id: Int64) throws {
        try db.run("DELETE FROM cached_files WHERE view = ? AND file_id = ?", [.text(view), .integer(id)])
    }

    /// Every cached file, least recently used first, and the bytes they hold in all.
    func cachedFiles() throws -> (files: [(view: String, id: Int64, byteCount: Int64)], bytes: Int64) {
        let files = try db.query("SELECT view, file_id, byte_count FROM cached_files ORDER BY used_at, file_id") {
            ($0.text(0) ?? "", $0.int(1), $0.int(2))
        }
        return (files, files.reduce(0) { $0.addingClamped($1.2) })
    }
}
