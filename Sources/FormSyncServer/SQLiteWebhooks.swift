import FormSyncProtocol
import FormSyncSQLite
import Foundation

/// Webhooks and their deliveries in the embedded store (`WebhookStore`), used under the
/// store's lock: one process, so a claim needs no more than the lock.
final class SQLiteWebhooks: WebhookStore, @unchecked Sendable {
    private let db: SQLiteConnection

    init(db: SQLiteConnection) {
        self.db = db
    }

    private static func text(_ value: String?) -> SQLValue { value.map(SQLValue.text) ?? .null }

    func addWebhook(_ webhook: StoredWebhook) throws -> Int64 {
        try db.run(
            """
            INSERT INTO webhooks (workspace, url, events, forms, secret, previous_secret, previous_until, created_by, created_at, cursor)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(webhook.workspace), .text(webhook.url), .text(webhook.events.map(\.rawValue).joined(separator: ",")),
                .text(webhook.forms.joined(separator: ",")), .text(webhook.secret), Self.text(webhook.previousSecret),
                webhook.previousUntil.map(SQLValue.integer) ?? .null, .text(webhook.createdBy), .integer(webhook.createdAt),
                .integer(webhook.cursor),
            ])
        return db.lastInsertRowID
    }

    private static let webhookColumns =
        "id, workspace, url, events, forms, secret, previous_secret, previous_until, created_by, created_at, cursor"

    private static func webhook(_ row: SQLiteConnection.Row) -> StoredWebhook {
        StoredWebhook(
            id: row.int(0), workspace: row.text(1) ?? "", url: row.text(2) ?? "",
            events: (row.text(3) ?? "").split(separator: ",").compactMap { HistoryEvent(rawValue: String($0)) },
            forms: (row.text(4) ?? "").split(separator: ",").map(String.init), secret: row.text(5) ?? "", previousSecret: row.text(6),
            previousUntil: row.optionalInt(7), createdBy: row.text(8) ?? "", createdAt: row.int(9), cursor: row.int(10))
    }

    func webhooks(workspace: String?) throws -> [StoredWebhook] {
        guard let workspace else { return try db.query("SELECT \(Self.webhookColumns) FROM webhooks ORDER BY id", [], Self.webhook) }
        return try db.query("SELECT \(Self.webhookColumns) FROM webhooks WHERE workspace = ? ORDER BY id", [.text(workspace)], Self.webhook)
    }

    func webhook(_ id: Int64, workspace: String?, locked: Bool) throws -> StoredWebhook? {
        try db.query("SELECT \(Self.webhookColumns) FROM webhooks WHERE id = ?", [.integer(id)], Self.webhook).first.flatMap {
            workspace == nil || $0.workspace == workspace ? $0 : nil
        }
    }

    func setSecrets(_ id: Int64, secret: String, previous: String?, previousUntil: Int64?) throws {
        try db.run(
            "UPDATE webhooks SET secret = ?, previous_secret = ?, previous_until = ? WHERE id = ?",
            [.text(secret), Self.text(previous), previousUntil.map(SQLValue.integer) ?? .null, .integer(id)])
    }

    func deleteWebhook(_ id: Int64) throws -> Bool {
        try db.run("DELETE FROM webhook_deliveries WHERE webhook_id = ?", [.integer(id)])
        return try db.run("DELETE FROM webhooks WHERE id = ?", [.integer(id)]) > 0
    }

    func addDeliveries(webhook: Int64, events: [StoredDocumentEvent], cursor: Int64, at now: Int64) throws {
        for event in events {
            try db.run(
                """
                INSERT OR IGNORE INTO webhook_deliveries (webhook_id, event_id, seq, document_id, event, state, next_attempt_at)
                VALUES (?, ?, ?, ?, ?, 'pending', ?)
                """,
                [
                    .integer(webhook), .integer(event.id), .integer(event.seq), .text(event.documentID), .text(event.event.rawValue),
                    .integer(now),
                ])
        }
        try db.run("UPDATE webhooks SET cursor = MAX(cursor, ?) WHERE id = ?", [.integer(cursor), .integer(webhook)])
    }

    private static let deliveryColumns = """
        id, webhook_id, event_id, seq, document_id, event, state, attempts, first_attempt_at, last_attempt_at, next_attempt_at,
        last_status, last_error, delivered_at
        """

    private static func delivery(_ row: SQLiteConnection.Row) -> StoredDelivery {
        StoredDelivery(
            id: row.int(0), webhookID: row.int(1), eventID: row.int(2), seq: row.int(3), documentID: row.text(4) ?? "",
            event: HistoryEvent(rawValue: row.text(5) ?? "") ?? .edited,
            state: WebhookDelivery.State(rawValue: row.text(6) ?? "") ?? .pending,
            attempts: Int(row.int(7)), firstAttemptAt: row.optionalInt(8), lastAttemptAt: row.optionalInt(9), nextAttemptAt: row.int(10),
            lastStatus: row.optionalInt(11).map(Int.init), lastError: row.text(12), deliveredAt: row.optionalInt(13))
    }

    func claimDeliveries(now: Int64, leaseUntil: Int64, limit: Int) throws -> [StoredDelivery] {
        let claimed = try db.query(
            """
            SELECT \(Self.deliveryColumns) FROM webhook_deliveries d
            WHERE d.state = 'pending' AND d.next_attempt_at <= ?1 AND d.claimed_until <= ?1
              AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.webhook_id = d.webhook_id AND e.document_id = d.document_id
                              AND e.state = 'pending' AND e.seq < d.seq)
            ORDER BY d.next_attempt_at, d.seq LIMIT ?2
            """, [.integer(now), .integer(Int64(limit))], Self.delivery)
        for delivery in claimed {
            try db.run("UPDATE webhook_deliveries SET claimed_until = ? WHERE id = ?", [.integer(leaseUntil), .integer(delivery.id)])
        }
        return claimed
    }

    func finishDelivery(_ id: Int64, _ attempt: DeliveryAttempt) throws {
        try db.run(
            """
            UPDATE webhook_deliveries SET state = ?, attempts = attempts + 1, first_attempt_at = COALESCE(first_attempt_at, ?),
                last_attempt_at = ?, next_attempt_at = ?, claimed_until = 0, last_status = ?, last_error = ?,
                delivered_at = CASE WHEN ? = 'delivered' THEN ? ELSE delivered_at END
            WHERE id = ?
            """,
            [
                .text(attempt.state.rawValue), .integer(attempt.at), .integer(attempt.at), .integer(attempt.nextAttemptAt),
                attempt.status.map { .integer(Int64($0)) } ?? .null, Self.text(attempt.error), .text(attempt.state.rawValue),
                .integer(attempt.at), .integer(id),
            ])
    }

    func delivery(_ id: Int64, webhook: Int64) throws -> StoredDelivery? {
        try db.query(
            "SELECT \(Self.deliveryColumns) FROM webhook_deliveries WHERE id = ? AND webhook_id = ?", [.integer(id), .integer(webhook)],
            Self.delivery
        ).first
    }

    func deliveries(webhook: Int64, state: WebhookDelivery.State?, limit: Int) throws -> [StoredDelivery] {
        var values: [SQLValue] = [.integer(webhook)]
        var condition = ""
        if let state {
            condition = " AND state = ?"
            values.append(.text(state.rawValue))
        }
        values.append(.integer(Int64(limit)))
        return try db.query(
            "SELECT \(Self.deliveryColumns) FROM webhook_deliveries WHERE webhook_id = ?\(condition) ORDER BY id DESC LIMIT ?", values,
            Self.delivery)
    }

    func deliveryCounts(webhook: Int64) throws -> (pending: Int, dead: Int) {
        try db.query(
            """
            SELECT COALESCE(SUM(state = 'pending'), 0), COALESCE(SUM(state = 'dead'), 0) FROM webhook_deliveries WHERE webhook_id = ?
            """, [.integer(webhook)]
        ) { (Int($0.int(0)), Int($0.int(1))) }.first ?? (0, 0)
    }

    func resendDelivery(_ id: Int64, webhook: Int64, at now: Int64) throws -> Bool {
        try db.run(
            """
            UPDATE webhook_deliveries SET state = 'pending', attempts = 0, first_attempt_at = NULL, next_attempt_at = ?, claimed_until = 0
            WHERE id = ? AND webhook_id = ? AND state = 'dead'
            """, [.integer(now), .integer(id), .integer(webhook)]) > 0
    }
}
