import FormSyncSQLite
import Foundation

/// Who may fetch a stored file: the principal that uploaded it, and any principal that sees
/// a record naming it (docs/PROTOCOL.md, "GET /files/<id>"). `record_files` lists the files
/// each record names, written with the record.
extension SQLiteServerStore {
    func mayRead(file id: Int64, workspace: String, principal: String) throws -> Bool {
        try db.query(Self.mayReadQuery, [.integer(id), .text(workspace), .text(principal)]) { $0.int(0) != 0 }.first ?? false
    }

    static let mayReadQuery = SQLiteConnection.Statement(
        """
        SELECT EXISTS (SELECT 1 FROM files WHERE id = ?1 AND workspace = ?2 AND principal = ?3)
            OR EXISTS (
                SELECT 1 FROM record_files f JOIN records r ON r.workspace = f.workspace AND r.type = f.type AND r.id = f.id
                WHERE f.workspace = ?2 AND f.file_id = ?1 AND (r.scope = '' OR r.scope = ?3))
        """)

    func indexRecordFiles(_ files: (String, StoredRecord) -> [Int64]) throws {
        try transaction {
            guard try db.query("SELECT COUNT(*) FROM record_files_indexed", [], { $0.int(0) }).first == 0 else { return }
            let all = try db.query("SELECT workspace, type, id, version, scope, payload FROM records", []) { row in
                (
                    row.text(0) ?? "",
                    StoredRecord(
                        type: row.text(1) ?? "", id: row.int(2), version: Int(row.int(3)), scope: row.text(4) ?? "",
                        payload: row.blob(5) ?? Data())
                )
            }
            for (workspace, record) in all {
                try recordTable.setRecordFiles(workspace: workspace, type: record.type, id: record.id, files: files(workspace, record))
            }
            try db.run("INSERT INTO record_files_indexed (done) VALUES (1)", [])
        }
    }
}
