import FormSyncServer
import Foundation

/// Tokens, devices and enrolments on PostgreSQL (see `CredentialStore`). Nothing of them is
/// cached by a node: every request reads its token and its device's revocation from here, so a
/// revocation holds on every node at once. A device or enrolment read inside a transaction is
/// read `FOR UPDATE`: two nodes refreshing the same device, or spending the same code, take turns.
extension PostgresServerStore {
    package func addToken(
        _ token: String, kind: String, grant: SyncServer.Grant, expiresAt: Int64, device: (id: String, generation: Int64)?
    ) throws {
        try query(
            """
            INSERT INTO grants (digest, kind, principal, role, workspaces, expires_at, device_id, generation)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            """,
            [
                .bytes(StoredGrant.digest(token)), .text(kind), .text(grant.principal), .text(grant.role.rawValue),
                .text(Self.joined(grant.workspaces)), .integer(expiresAt), device.map { .text($0.id) } ?? .null,
                device.map { .integer($0.generation) } ?? .null,
            ])
    }

    package func grant(ofToken token: String, kind: String) throws -> StoredGrant? {
        Self.storedGrant(try query(Self.grantQuery, [.bytes(StoredGrant.digest(token)), .text(kind)]))
    }

    /// A token's grant and its device's state, by the token's digest ($1) and kind ($2).
    static let grantQuery = """
        SELECT g.principal, g.role, g.workspaces, g.expires_at, g.device_id, g.generation, d.revoked_at, d.last_seen_at
        FROM grants g LEFT JOIN devices d ON d.device_id = g.device_id WHERE g.digest = $1 AND g.kind = $2
        """

    /// The grant `grantQuery` found, if it found one.
    static func storedGrant(_ rows: PostgresRows) -> StoredGrant? {
        guard rows.count == 1, let grant = Self.grant(rows, 0, principal: 0, role: 1, workspaces: 2) else { return nil }
        return StoredGrant(
            grant: grant, expiresAt: rows.int(0, 3) ?? 0, device: rows.text(0, 4), generation: rows.int(0, 5),
            deviceRevoked: !rows.isNull(0, 6), deviceLastSeen: rows.int(0, 7))
    }

    package func expireAccessTokens(at now: Int64) {
        _ = try? query("UPDATE grants SET expires_at = $1 WHERE kind = 'access' AND expires_at > $1", [.integer(now)])
    }

    package func assignToken(_ token: String, kind: String, device: String, generation: Int64) throws {
        try query(
            "UPDATE grants SET device_id = $1, generation = $2 WHERE digest = $3 AND kind = $4",
            [.text(device), .integer(generation), .bytes(StoredGrant.digest(token)), .text(kind)])
    }

    package func removeDevicelessTokens(principal: String, workspace: String) throws {
        try query(
            """
            DELETE FROM grants WHERE device_id IS NULL AND principal = $1
                AND position(E'\\n' || $2 || E'\\n' in E'\\n' || workspaces || E'\\n') > 0
            """, [.text(principal), .text(workspace)])
    }

    package func removeTokens(device: String, generation: Int64) throws {
        try query("DELETE FROM grants WHERE device_id = $1 AND generation = $2", [.text(device), .integer(generation)])
    }

    package func removeTokens(device: String, expiredBefore cutoff: Int64) throws {
        try query("DELETE FROM grants WHERE device_id = $1 AND expires_at < $2", [.text(device), .integer(cutoff)])
    }

    // MARK: Devices

    package func addDevice(_ device: StoredDevice) throws {
        try query(
            """
            INSERT INTO devices (device_id, principal, role, workspaces, name, app_version, spec_version, installation, enrolled_at,
                last_seen_at, current_generation, previous_generation, next_generation, revoked_at, revoked_reason)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
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

    package func device(_ id: String) throws -> StoredDevice? {
        let rows = try query("SELECT \(Self.deviceColumns) FROM devices WHERE device_id = $1\(lockingClause)", [.text(id)])
        return rows.count == 1 ? Self.device(rows, 0) : nil
    }

    package func devices(workspace: String, principal: String?, limit: Int) throws -> [StoredDevice] {
        let rows = try query(
            """
            SELECT \(Self.deviceColumns) FROM devices
            WHERE position(E'\\n' || $1 || E'\\n' in E'\\n' || workspaces || E'\\n') > 0 AND ($2::text IS NULL OR principal = $2)
            ORDER BY enrolled_at, device_id LIMIT $3
            """, [.text(workspace), principal.map { .text($0) } ?? .null, .integer(Int64(limit))])
        return (0..<rows.count).compactMap { Self.device(rows, $0) }
    }

    package func updateDevice(_ device: StoredDevice) throws {
        try query(
            """
            UPDATE devices SET name = $2, app_version = $3, spec_version = $4, last_seen_at = $5, current_generation = $6,
                previous_generation = $7, next_generation = $8, revoked_at = $9, revoked_reason = $10
            WHERE device_id = $1
            """,
            [
                .text(device.id), .text(device.name), .text(device.appVersion), .text(device.specVersion), .integer(device.lastSeenAt),
                .integer(device.currentGeneration), device.previousGeneration.map { .integer($0) } ?? .null,
                .integer(device.nextGeneration), device.revokedAt.map { .integer($0) } ?? .null,
                device.revokedReason.map { .text($0) } ?? .null,
            ])
    }

    package func touchDevice(_ id: String, at now: Int64, staleBefore: Int64) throws {
        try query(
            "UPDATE devices SET last_seen_at = $2 WHERE device_id = $1 AND last_seen_at < $3",
            [.text(id), .integer(now), .integer(staleBefore)])
    }

    static let deviceColumns = """
        device_id, principal, role, workspaces, name, app_version, spec_version, installation, enrolled_at, last_seen_at,
        current_generation, previous_generation, next_generation, revoked_at, revoked_reason
        """

    static func device(_ rows: PostgresRows, _ row: Int) -> StoredDevice? {
        guard let grant = grant(rows, row, principal: 1, role: 2, workspaces: 3) else { return nil }
        return StoredDevice(
            id: rows.text(row, 0) ?? "", grant: grant, name: rows.text(row, 4) ?? "", appVersion: rows.text(row, 5) ?? "",
            specVersion: rows.text(row, 6) ?? "", installation: rows.text(row, 7), enrolledAt: rows.int(row, 8) ?? 0,
            lastSeenAt: rows.int(row, 9) ?? 0, currentGeneration: rows.int(row, 10) ?? 0, previousGeneration: rows.int(row, 11),
            nextGeneration: rows.int(row, 12) ?? 0, revokedAt: rows.int(row, 13), revokedReason: rows.text(row, 14))
    }

    // MARK: Enrolments

    package func addEnrolment(digest: Data, _ enrolment: StoredEnrolment) throws {
        try query(
            """
            INSERT INTO enrolments (digest, principal, role, workspaces, created_at, expires_at, created_by)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """,
            [
                .bytes(digest), .text(enrolment.grant.principal), .text(enrolment.grant.role.rawValue),
                .text(Self.joined(enrolment.grant.workspaces)), .integer(enrolment.createdAt), .integer(enrolment.expiresAt),
                .text(enrolment.createdBy),
            ])
    }

    package func enrolment(digest: Data) throws -> StoredEnrolment? {
        let rows = try query(
            """
            SELECT principal, role, workspaces, created_at, expires_at, created_by, device_id, installation, used_at
            FROM enrolments WHERE digest = $1\(lockingClause)
            """, [.bytes(digest)])
        guard rows.count == 1, let grant = Self.grant(rows, 0, principal: 0, role: 1, workspaces: 2) else { return nil }
        return StoredEnrolment(
            grant: grant, createdAt: rows.int(0, 3) ?? 0, expiresAt: rows.int(0, 4) ?? 0, createdBy: rows.text(0, 5) ?? "",
            device: rows.text(0, 6), installation: rows.text(0, 7), usedAt: rows.int(0, 8))
    }

    package func useEnrolment(digest: Data, device: String, installation: String?, at now: Int64) throws {
        try query(
            "UPDATE enrolments SET device_id = $2, installation = $3, used_at = $4 WHERE digest = $1",
            [.bytes(digest), .text(device), installation.map { .text($0) } ?? .null, .integer(now)])
    }

    static func joined(_ workspaces: [String]) -> String { workspaces.joined(separator: "\n") }

    static func grant(_ rows: PostgresRows, _ row: Int, principal: Int, role: Int, workspaces: Int) -> SyncServer.Grant? {
        guard let name = rows.text(row, principal), let role = SyncServer.Role(rawValue: rows.text(row, role) ?? "") else { return nil }
        return SyncServer.Grant(
            principal: name, workspaces: (rows.text(row, workspaces) ?? "").split(separator: "\n").map(String.init), role: role)
    }
}
