import FormSyncSQLite
import Foundation

/// Tokens, devices and enrolments (`SQLiteCredentials`), and who owns what: documents, files and
/// uploads remember the principal that created them, so that the access rules
/// (docs/PROTOCOL.md, "Access rules") can tell one principal's data from another's.
extension SQLiteServerStore {
    func addToken(_ token: String, kind: String, grant: SyncServer.Grant, expiresAt: Int64, device: (id: String, generation: Int64)?) throws
    {
        try credentials.addToken(token, kind: kind, grant: grant, expiresAt: expiresAt, device: device)
    }
    func grant(ofToken token: String, kind: String) throws -> StoredGrant? { try credentials.grant(ofToken: token, kind: kind) }
    func expireAccessTokens(at now: Int64) { credentials.expireAccessTokens(at: now) }
    func assignToken(_ token: String, kind: String, device: String, generation: Int64) throws {
        try credentials.assignToken(token, kind: kind, device: device, generation: generation)
    }
    func removeDevicelessTokens(principal: String, workspace: String) throws {
        try credentials.removeDevicelessTokens(principal: principal, workspace: workspace)
    }
    func removeTokens(device: String, generation: Int64) throws { try credentials.removeTokens(device: device, generation: generation) }
    func removeTokens(device: String, expiredBefore cutoff: Int64) throws {
        try credentials.removeTokens(device: device, expiredBefore: cutoff)
    }
    func addDevice(_ device: StoredDevice) throws { try credentials.addDevice(device) }
    func device(_ id: String) throws -> StoredDevice? { try credentials.device(id) }
    func devices(workspace: String, principal: String?, limit: Int) throws -> [StoredDevice] {
        try credentials.devices(workspace: workspace, principal: principal, limit: limit)
    }
    func updateDevice(_ device: StoredDevice) throws { try credentials.updateDevice(device) }
    func touchDevice(_ id: String, at now: Int64, staleBefore: Int64) throws {
        try credentials.touchDevice(id, at: now, staleBefore: staleBefore)
    }
    func addEnrolment(digest: Data, _ enrolment: StoredEnrolment) throws { try credentials.addEnrolment(digest: digest, enrolment) }
    func enrolment(digest: Data) throws -> StoredEnrolment? { try credentials.enrolment(digest: digest) }
    func useEnrolment(digest: Data, device: String, installation: String?, at now: Int64) throws {
        try credentials.useEnrolment(digest: digest, device: device, installation: installation, at: now)
    }

    // MARK: Owners

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
