import FormSyncModel
import FormSyncSQLite
import Foundation

/// Tokens and who owns what (and, in the same migration, the id sequence of
/// `ServerStore+Records`). A token is stored only as its SHA-256 (a stolen database holds no
/// usable token), with the grant it carries: its principal, its role and the workspaces it may
/// name. Documents, files and uploads remember the principal that created them, so that the
/// access rules (docs/PROTOCOL.md, "Access rules") can tell one principal's data from another's.
extension SQLiteServerStore {
    func addToken(_ token: String, kind: String, grant: SyncServer.Grant, expiresAt: Int64) throws {
        try db.run(
            "INSERT INTO grants (digest, kind, principal, role, workspaces, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .blob(StoredGrant.digest(token)), .text(kind), .text(grant.principal), .text(grant.role.rawValue),
                .text(grant.workspaces.joined(separator: "\n")), .integer(expiresAt),
            ])
    }

    /// The grant of a token of `kind`, valid or not; nil for a token the server never issued.
    func grant(ofToken token: String, kind: String) throws -> StoredGrant? {
        (try db.query(
            "SELECT principal, role, workspaces, expires_at FROM grants WHERE digest = ? AND kind = ?",
            [.blob(StoredGrant.digest(token)), .text(kind)]
        ) {
            row -> StoredGrant? in
            guard let role = SyncServer.Role(rawValue: row.text(1) ?? "") else { return nil }
            let workspaces = (row.text(2) ?? "").split(separator: "\n").map(String.init)
            return StoredGrant(
                grant: SyncServer.Grant(principal: row.text(0) ?? "", workspaces: workspaces, role: role), expiresAt: row.int(3))
        }).first ?? nil
    }

    func expireAccessTokens(at now: Int64) {
        _ = try? db.run("UPDATE grants SET expires_at = ? WHERE kind = 'access' AND expires_at > ?", [.integer(now), .integer(now)])
    }

    /// Which form, workspace and principal a document id belongs to, if the server holds it as
    /// a document, a file or a resumable upload (`form` is nil for a file or an upload). The
    /// principal is nil for what was stored before owners were recorded.
    func owner(of documentID: String) -> (form: String?, workspace: String, principal: String?)? {
        (try? db.query(Self.ownerQuery, [.text(documentID)]) { ($0.text(0), $0.text(1) ?? "", $0.text(2)) })?.first
    }

    /// One statement for the three tables a document id can live in (a write asks it each time).
    static let ownerQuery = SQLiteConnection.Statement(
        """
        SELECT form, workspace, principal FROM documents WHERE document_id = ?1
        UNION ALL SELECT NULL, workspace, principal FROM files WHERE document_id = ?1
        UNION ALL SELECT NULL, workspace, principal FROM uploads WHERE document_id = ?1
        LIMIT 1
        """)
}
