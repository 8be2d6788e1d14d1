import FormSyncServer
import Foundation

/// Support requests and bundles on PostgreSQL (see `SupportStore`): every node reads them from
/// here, so a request made through one node reaches its device through any other.
extension PostgresServerStore: SupportStore {
    package var support: any SupportStore { self }

    package func addSupportRequest(
        workspace: String, deviceID: String, reason: String, requestedBy: String, at now: Int64
    ) throws
        -> Int64
    {
        let rows = try query(
            """
            INSERT INTO support_requests (workspace, device_id, reason, requested_by, requested_at) VALUES ($1, $2, $3, $4, $5)
            RETURNING id
            """, [.text(workspace), .text(deviceID), .text(reason), .text(requestedBy), .integer(now)])
        return rows.int(0, 0) ?? 0
    }

    package func openSupportRequest(workspace: String, device: String) throws -> StoredSupportRequest? {
        Self.requests(
            try query(
                """
                SELECT \(Self.requestColumns) FROM support_requests WHERE device_id = $1 AND workspace = $2 AND answered_at IS NULL
                ORDER BY id LIMIT 1
                """, [.text(device), .text(workspace)])
        ).first
    }

    package func supportRequest(_ id: Int64, workspace: String) throws -> StoredSupportRequest? {
        Self.requests(
            try query(
                "SELECT \(Self.requestColumns) FROM support_requests WHERE id = $1 AND workspace = $2", [.integer(id), .text(workspace)])
        ).first
    }

    package func answerSupportRequest(_ id: Int64, bundle: Int64, at now: Int64) throws {
        try query(
            "UPDATE support_requests SET answered_at = $1, bundle_id = $2 WHERE id = $3 AND answered_at IS NULL",
            [.integer(now), .integer(bundle), .integer(id)])
    }

    package func addSupportBundle(workspace: String, deviceID: String?, principal: String, body: Data, at now: Int64) throws -> Int64 {
        let rows = try query(
            """
            INSERT INTO support_bundles (workspace, device_id, principal, received_at, body) VALUES ($1, $2, $3, $4, $5) RETURNING id
            """, [.text(workspace), deviceID.map { .text($0) } ?? .null, .text(principal), .integer(now), .bytes(body)])
        return rows.int(0, 0) ?? 0
    }

    package func supportBundles(workspace: String, device: String?, limit: Int) throws -> [StoredSupportBundle] {
        let rows = try query(
            """
            SELECT id, workspace, device_id, principal, received_at, body FROM support_bundles
            WHERE workspace = $1 AND ($2::text IS NULL OR device_id = $2) ORDER BY id DESC LIMIT $3
            """, [.text(workspace), device.map { .text($0) } ?? .null, .integer(Int64(limit))])
        return (0..<rows.count).map { row in
            StoredSupportBundle(
                id: rows.int(row, 0) ?? 0, workspace: rows.text(row, 1) ?? "", deviceID: rows.text(row, 2),
                principal: rows.text(row, 3) ?? "", receivedAt: rows.int(row, 4) ?? 0, body: rows.bytes(row, 5) ?? Data())
        }
    }

    private static let requestColumns = "id, workspace, device_id, reason, requested_by, requested_at, answered_at, bundle_id"

    private static func requests(_ rows: PostgresRows) -> [StoredSupportRequest] {
        (0..<rows.count).map { row in
            StoredSupportRequest(
                id: rows.int(row, 0) ?? 0, workspace: rows.text(row, 1) ?? "", deviceID: rows.text(row, 2) ?? "",
                reason: rows.text(row, 3) ?? "", requestedBy: rows.text(row, 4) ?? "", requestedAt: rows.int(row, 5) ?? 0,
                answeredAt: rows.int(row, 6), bundleID: rows.int(row, 7))
        }
    }
}
