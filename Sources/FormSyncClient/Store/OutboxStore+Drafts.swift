import FormSyncSQLite
import Foundation

/// Drafts and their attached files (`drafts`, `draft_files`).
extension OutboxStore {
    /// A draft as kept.
    struct DraftRow {
        var id: String
        var view: String
        var form: String
        var formVersion: Int
        var documentID: String
        var payload: Data
        var createdAt: Int64
        var updatedAt: Int64
    }

    /// A file attached to a draft, copied into the stash.
    struct DraftFile {
        var placeholder: Int64
        var path: String
        var contentType: String?
        var byteCount: Int64
        var sha256: Data
    }

    /// Writes a draft's payload (a new draft, or the next save of one).
    func saveDraft(_ row: DraftRow) throws {
        try db.run(
            """
            INSERT INTO drafts (id, view, form, form_version, document_id, payload, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET form_version = excluded.form_version, payload = excluded.payload, updated_at = excluded.updated_at
            """,
            [
                .text(row.id), .text(row.view), .text(row.form), .integer(Int64(row.formVersion)), .text(row.documentID),
                .blob(row.payload),
                .integer(row.createdAt), .integer(row.updatedAt),
            ])
    }

    private static let draftColumns = "id, view, form, form_version, document_id, payload, created_at, updated_at"

    private static func draft(_ r: SQLiteConnection.Row) -> DraftRow {
        DraftRow(
            id: r.text(0) ?? "", view: r.text(1) ?? "", form: r.text(2) ?? "", formVersion: Int(r.int(3)), documentID: r.text(4) ?? "",
            payload: r.blob(5) ?? Data(), createdAt: r.int(6), updatedAt: r.int(7))
    }

    func draft(_ id: String) throws -> DraftRow? {
        try db.query("SELECT \(Self.draftColumns) FROM drafts WHERE id = ?", [.text(id)], Self.draft).first
    }

    /// The drafts of `view`, the most recently saved first.
    func drafts(view: String) throws -> [DraftRow] {
        try db.query("SELECT \(Self.draftColumns) FROM drafts WHERE view = ? ORDER BY updated_at DESC, id", [.text(view)], Self.draft)
    }

    func addDraftFile(draft: String, _ file: DraftFile) throws {
        try db.run(
            "INSERT OR REPLACE INTO draft_files (draft_id, placeholder, path, content_type, byte_count, sha256) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .text(draft), .integer(file.placeholder), .text(file.path), file.contentType.map(SQLValue.text) ?? .null,
                .integer(file.byteCount), .blob(file.sha256),
            ])
    }

    func draftFiles(draft: String) throws -> [DraftFile] {
        try db.query(
            "SELECT placeholder, path, content_type, byte_count, sha256 FROM draft_files WHERE draft_id = ? ORDER BY placeholder DESC",
            [.text(draft)]
        ) { r in
            DraftFile(
                placeholder: r.int(0), path: r.text(1) ?? "", contentType: r.text(2), byteCount: r.int(3), sha256: r.blob(4) ?? Data())
        }
    }

    /// Forgets a draft and its files' rows; the copies are the caller's to remove once this commits.
    func deleteDraft(_ id: String) throws {
        try db.run("DELETE FROM draft_files WHERE draft_id = ?", [.text(id)])
        try db.run("DELETE FROM drafts WHERE id = ?", [.text(id)])
    }
}
