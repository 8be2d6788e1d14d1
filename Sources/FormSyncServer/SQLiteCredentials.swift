import FormSyncModel
import FormSyncSQLite
import Foundation

/// The embedded store's tokens, devices and enrolments (`CredentialStore`), in the `grants`,
/// `devices` and `enrolments` tables. A token or code is stored only as its SHA-256 (a stolen
/// database holds no usable credential), with the grant it carries (its principal, its role and
/// the workspaces it may name) and the device generation it belongs to. Used under the store's
/// lock: a read inside a transaction is as good as a row lock.
final class SQLiteCredentials: @unchecked Sendable {
    private let db: SQLiteConnection

    init(db: SQLiteConnection) {
        self.db = db
    }

    func addToken(_ token: String, kind: String, grant: SyncServer.Grant, expiresAt: Int64, device: (id: String, generation: Int64)?) throws
    {
        try db.run(
            "INSERT INTO grants (digest, kind, principal, role, workspaces, expires_at, device_id, generation) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .blob(StoredGrant.digest(token)), .text(kind), .text(grant.principal), .text(grant.role.rawValue),
                .text(Self.joined(grant.workspaces)), .integer(expiresAt), device.map { .text($0.id) } ?? .null,
                device.map { .integer($0.generation) } ?? .null,
            ])
    }

    func grant(ofToken token: String, kind: String) throws -> StoredGrant? {
        (try db.query(Self.grantQuery, [.blob(StoredGrant.digest(token)), .text(kind)]) { row -> StoredGrant? in
            guard let grant = Self.grant(principal: row.text(0), role: row.text(1), workspaces: row.text(2)) else { return nil }
            return StoredGrant(
                grant: grant, expiresAt: row.int(3), device: row.text(4), generation: row.optionalInt(5),
                deviceRevoked: !row.isNull(6), deviceLastSeen: row.optionalInt(7))
        }).first ?? nil
    }

    static let grantQuery = SQLiteConnection.Statement(
        """
        SELECT g.principal, g.role, g.workspaces, g.expires_at, g.device_id, g.generation, d.revoked_at, d.last_seen_at
        FROM grants g LEFT JOIN devices d ON d.device_id = g.device_id WHERE g.digest = ? AND g.kind = ?
        """)

    func expireAccessTokens(at now: Int64) {
        _ = try? db.run("UPDATE grants SET expires_at = ? WHERE kind = 'access' AND expires_at > ?", [.integer(now), .integer(now)])
    }

    func assignToken(_ token: String, kind: String, device: String, generation: Int64) throws {
        try db.run(
            "UPDATE grants SET device_id = ?, generation = ? WHERE digest = ? AND kind = ?",
            [.text(device), .integer(generation), .blob(StoredGrant.digest(token)), .text(kind)])
    }

    func removeDevicelessTokens(principal: String, workspace: String) throws {
        try db.run(
            """
            DELETE FROM grants WHERE device_id IS NULL AND principal = ?1
                AND instr(char(10) || workspaces || char(10), char(10) || ?2 || char(10)) > 0
            """, [.text(principal), .text(workspace)])
    }

    func removeTokens(device: String, generation: Int64) throws {
        try db.run("DELETE FROM grants WHERE device_id = ? AND generation = ?", [.text(device), .integer(generation)])
    }

    func removeTokens(device: String, expiredBefore cutoff: Int64) throws {
        try db.run("DELETE FROM grants WHERE device_id = ? AND expires_at < ?", [.text(device), .integer(cutoff)])
    }

    // MARK: Devices

    func addDevice(_ device: StoredDevice) throws {
        try db.run(
            """
            INSERT INTO devices (device_id, principal, role, workspaces, name, app_version, spec_version, installation, enrolled_at,
                last_seen_at, current_generation, previous_generation, next_generation, revoked_at, revoked_reason)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(device.id), .text(device.grant.principal), .text(device.grant.role.rawValue),
                .text(Self.joined(device.grant.workspaces)),
                .text(device.name), .text(device.appVersion), .text(device.specVersion), device.installation.map { .text($0) } ?? .null,
                .integer(device.enrolledAt), .integer(device.lastSeenAt), .integer(device.currentGeneration),
                device.previousGeneration.map { .integer($0) } ?? .null, .integer(device.nextGeneration),
                device.revokedAt.map { .integer($0) } ?? .null, device.revokedReason.map { .text($0) } ?? .null,
            ])
    }

    func device(_ id: String) throws -> StoredDevice? {
        try db.query("SELECT \(Self.deviceColumns) FROM devices WHERE device_id = ?", [.text(id)], Self.device).first ?? nil
    }

    func devices(workspace: String, principal: String?, limit: Int) throws -> [StoredDevice] {
        try db.query(
            """
            SELECT \(Self.deviceColumns) FROM devices
            WHERE instr(char(10) || workspaces || char(10), char(10) || ?1 || char(10)) > 0 AND (?2 IS NULL OR principal = ?2)
            ORDER BY enrolled_at, device_id LIMIT ?3
            """, [.text(workspace), principal.map { .text($0) } ?? .null, .integer(Int64(limit))], Self.device
        ).compactMap { $0 }
    }

    func updateDevice(_ device: StoredDevice) throws {
        try db.run(
            """
            UPDATE devices SET name = ?2, app_version = ?3, spec_version = ?4, last_seen_at = ?5, current_generation = ?6,
                previous_generation = ?7, next_generation = ?8, revoked_at = ?9, revoked_reason = ?10
            WHERE device_id = ?1
            """,
            [
                .text(device.id), .text(device.name), .text(device.appVersion), .text(device.specVersion), .integer(device.lastSeenAt),
                .integer(device.currentGeneration), device.previousGeneration.map { .integer($0) } ?? .null,
                .integer(device.nextGeneration), device.revokedAt.map { .integer($0) } ?? .null,
                device.revokedReason.map { .text($0) } ?? .null,
            ])
    }

    func touchDevice(_ id: String, at now: Int64, staleBefore: Int64) throws {
        try db.run(
            "UPDATE devices SET last_seen_at = ?2 WHERE device_id = ?1 AND last_seen_at < ?3",
            [.text(id), .integer(now), .integer(staleBefore)])
    }

    static let deviceColumns = """
        device_id, principal, role, workspaces, name, app_version, spec_version, installation, enrolled_at, last_seen_at,
        current_generation, previous_generation, next_generation, revoked_at, revoked_reason
        """

    static func device(_ row: SQLiteConnection.Row) -> StoredDevice? {
        guard let grant = grant(principal: row.text(1), role: row.text(2), workspaces: row.text(3)) else { return nil }
        return StoredDevice(
            id: row.text(0) ?? "", grant: grant, name: row.text(4) ?? "", appVersion: row.text(5) ?? "", specVersion: row.text(6) ?? "",
            installation: row.text(7), enrolledAt: row.int(8), lastSeenAt: row.int(9), currentGeneration: row.int(10),
            previousGeneration: row.optionalInt(11), nextGeneration: row.int(12), revokedAt: row.optionalInt(13),
            revokedReason: row.text(14))
    }

    // MARK: Enrolments

    func addEnrolment(digest: Data, _ enrolment: StoredEnrolment) throws {
        try db.run(
            """
            INSERT INTO enrolments (digest, principal, role, workspaces, created_at, expires_at, created_by)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .blob(digest), .text(enrolment.grant.principal), .text(enrolment.grant.role.rawValue),
                .text(Self.joined(enrolment.grant.workspaces)), .integer(enrolment.createdAt), .integer(enrolment.expiresAt),
                .text(enrolment.createdBy),
            ])
    }

    func enrolment(digest: Data) throws -> StoredEnrolment? {
        try db.query(
            """
            SELECT principal, role, workspaces, created_at, expires_at, created_by, device_id, installation, used_at
            FROM enrolments WHERE digest = ?
            """, [.blob(digest)]
        ) { row -> StoredEnrolment? in
            guard let grant = Self.grant(principal: row.text(0), role: row.text(1), workspaces: row.text(2)) else { return nil }
            return StoredEnrolment(
                grant: grant, createdAt: row.int(3), expiresAt: row.int(4), createdBy: row.text(5) ?? "", device: row.text(6),
                installation: row.text(7), usedAt: row.optionalInt(8))
        }.first ?? nil
    }

    func useEnrolment(digest: Data, device: String, installation: String?, at now: Int64) throws {
        try db.run(
            "UPDATE enrolments SET device_id = ?2, installation = ?3, used_at = ?4 WHERE digest = ?1",
            [.blob(digest), .text(device), installation.map { .text($0) } ?? .null, .integer(now)])
    }

    static func joined(_ workspaces: [String]) -> String { workspaces.joined(separator: "\n") }

    static func grant(principal: String?, role: String?, workspaces: String?) -> SyncServer.Grant? {
        guard let principal, let role = SyncServer.Role(rawValue: role ?? "") else { return nil }
        return SyncServer.Grant(principal: principal, workspaces: (workspaces ?? "").split(separator: "\n").map(String.init), role: role)
    }
}
