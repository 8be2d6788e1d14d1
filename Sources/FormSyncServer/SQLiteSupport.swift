import FormSyncSQLite
import Foundation

/// Support requests and bundles in the embedded store (`SupportStore`).
final class SQLiteSupport: SupportStore, @unchecked Sendable {
    private let db: SQLiteConnection

    init(db: SQLiteConnection) {
        self.db = db
    }

    func addSupportRequest(workspace: String, deviceID: String, reason: String, requestedBy: String, at now: Int64) throws -> Int64 {
        try db.run(
            "INSERT INTO support_requests (workspace, device_id, reason, requested_by, requested_at) VALUES (?, ?, ?, ?, ?)",
            [.text(workspace), .text(deviceID), .text(reason), .text(requestedBy), .integer(now)])
        return db.lastInsertRowID
    }

    func openSupportRequest(workspace: String, device: String) throws -> StoredSupportRequest? {
        try db.query(
            "SELECT \(Self.requestColumns) FROM support_requests WHERE device_id = ? AND workspace = ? AND answered_at IS NULL ORDER BY id LIMIT 1",
            [.text(device), .text(workspace)], Self.request
        ).first
    }

    func supportRequest(_ id: Int64, workspace: String) throws -> StoredSupportRequest? {
        try db.query(
            "SELECT \(Self.requestColumns) FROM support_requests WHERE id = ? AND workspace = ?", [.integer(id), .text(workspace)],
            Self.request
        ).first
    }

    func answerSupportRequest(_ id: Int64, bundle: Int64, at now: Int64) throws {
        try db.run(
            "UPDATE support_requests SET answered_at = ?, bundle_id = ? WHERE id = ? AND answered_at IS NULL",
            [.integer(now), .integer(bundle), .integer(id)])
    }

    func addSupportBundle(workspace: String, deviceID: String?, principal: String, body: Data, at now: Int64) throws -> Int64 {
        try db.run(
            "INSERT INTO support_bundles (workspace, device_id, principal, received_at, body) VALUES (?, ?, ?, ?, ?)",
            [.text(workspace), deviceID.map(SQLValue.text) ?? .null, .text(principal), .integer(now), .blob(body)])
        return db.lastInsertRowID
    }

    func supportBundles(workspace: String, device: String?, limit: Int) throws -> [StoredSupportBundle] {
        try db.query(
            """
            SELECT id, workspace, device_id, principal, received_at, body FROM support_bundles
            WHERE workspace = ? AND (? IS NULL OR device_id = ?) ORDER BY id DESC LIMIT ?
            """,
            [.text(workspace), device.map(SQLValue.text) ?? .null, device.map(SQLValue.text) ?? .null, .integer(Int64(limit))]
        ) {
            StoredSupportBundle(
                id: $0.int(0), workspace: $0.text(1) ?? "", deviceID: $0.text(2), principal: $0.text(3) ?? "", receivedAt: $0.int(4),
                body: $0.blob(5) ?? Data())
        }
    }

    private static let requestColumns = "id, workspace, device_id, reason, requested_by, requested_at, answered_at, bundle_id"

    private static func request(_ row: SQLiteConnection.Row) -> StoredSupportRequest {
        StoredSupportRequest(
            id: row.int(0), workspace: row.text(1) ?? "", deviceID: row.text(2) ?? "", reason: row.text(3) ?? "",
            requestedBy: row.text(4) ?? "", requestedAt: row.int(5), answeredAt: row.optionalInt(6), bundleID: row.optionalInt(7))
    }
}
