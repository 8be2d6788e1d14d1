import FormSyncProtocol
import FormSyncServer
import Foundation

/// Webhooks and their deliveries on PostgreSQL (`WebhookStore`): every node delivers, and the
/// database keeps them from stepping on each other. One node at a time makes a receiver's
/// deliveries (its row, locked); a delivery is claimed by one node (`FOR UPDATE SKIP LOCKED`)
/// for a lease, so a node that dies mid-send leaves it to another once the lease ends.
extension PostgresServerStore: WebhookStore {
    package var webhooks: any WebhookStore { self }

    private static func text(_ value: String?) -> PostgresValue { value.map(PostgresValue.text) ?? .null }

    package func addWebhook(_ webhook: StoredWebhook) throws -> Int64 {
        let rows = try query(
            """
            INSERT INTO webhooks (workspace, url, events, forms, secret, previous_secret, previous_until, created_by, created_at, cursor)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id
            """,
            [
                .text(webhook.workspace), .text(webhook.url), .text(webhook.events.map(\.rawValue).joined(separator: ",")),
                .text(webhook.forms.joined(separator: ",")), .text(webhook.secret), Self.text(webhook.previousSecret),
                webhook.previousUntil.map(PostgresValue.integer) ?? .null, .text(webhook.createdBy), .integer(webhook.createdAt),
                .integer(webhook.cursor),
            ])
        return rows.int(0, 0) ?? 0
    }

    private static let webhookColumns =
        "id, workspace, url, events, forms, secret, previous_secret, previous_until, created_by, created_at, cursor"

    private static func webhooks(_ rows: PostgresRows) -> [StoredWebhook] {
        (0..<rows.count).map { row in
            StoredWebhook(
                id: rows.int(row, 0) ?? 0, workspace: rows.text(row, 1) ?? "", url: rows.text(row, 2) ?? "",
                events: (rows.text(row, 3) ?? "").split(separator: ",").compactMap { HistoryEvent(rawValue: String($0)) },
                forms: (rows.text(row, 4) ?? "").split(separator: ",").map(String.init), secret: rows.text(row, 5) ?? "",
                previousSecret: rows.text(row, 6), previousUntil: rows.int(row, 7), createdBy: rows.text(row, 8) ?? "",
                createdAt: rows.int(row, 9) ?? 0, cursor: rows.int(row, 10) ?? 0)
        }
    }

    package func webhooks(workspace: String?) throws -> [StoredWebhook] {
        guard let workspace else { return Self.webhooks(try query("SELECT \(Self.webhookColumns) FROM webhooks ORDER BY id")) }
        return Self.webhooks(
            try query("SELECT \(Self.webhookColumns) FROM webhooks WHERE workspace = $1 ORDER BY id", [.text(workspace)]))
    }

    package func webhook(_ id: Int64, workspace: String?, locked: Bool) throws -> StoredWebhook? {
        Self.webhooks(
            try query("SELECT \(Self.webhookColumns) FROM webhooks WHERE id = $1\(locked ? " FOR UPDATE" : "")", [.integer(id)])
        ).first.flatMap { workspace == nil || $0.workspace == workspace ? $0 : nil }
    }

    package func setSecrets(_ id: Int64, secret: String, previous: String?, previousUntil: Int64?) throws {
        try query(
            "UPDATE webhooks SET secret = $1, previous_secret = $2, previous_until = $3 WHERE id = $4",
            [.text(secret), Self.text(previous), previousUntil.map(PostgresValue.integer) ?? .null, .integer(id)])
    }

    package func deleteWebhook(_ id: Int64) throws -> Bool {
        try query("DELETE FROM webhook_deliveries WHERE webhook_id = $1", [.integer(id)])
        return try query("DELETE FROM webhooks WHERE id = $1", [.integer(id)]).affected > 0
    }

    package func addDeliveries(webhook: Int64, events: [StoredDocumentEvent], cursor: Int64, at now: Int64) throws {
        for event in events {
            try query(
                """
                INSERT INTO webhook_deliveries (webhook_id, event_id, seq, document_id, event, state, next_attempt_at)
                VALUES ($1, $2, $3, $4, $5, 'pending', $6) ON CONFLICT (webhook_id, event_id) DO NOTHING
                """,
                [
                    .integer(webhook), .integer(event.id), .integer(event.seq), .text(event.documentID), .text(event.event.rawValue),
                    .integer(now),
                ])
        }
        try query("UPDATE webhooks SET cursor = GREATEST(cursor, $1) WHERE id = $2", [.integer(cursor), .integer(webhook)])
    }

    private static let deliveryColumns = """
        id, webhook_id, event_id, seq, document_id, event, state, attempts, first_attempt_at, last_attempt_at, next_attempt_at,
        last_status, last_error, delivered_at
        """

    private static func deliveries(_ rows: PostgresRows) -> [StoredDelivery] {
        (0..<rows.count).map { row in
            StoredDelivery(
                id: rows.int(row, 0) ?? 0, webhookID: rows.int(row, 1) ?? 0, eventID: rows.int(row, 2) ?? 0, seq: rows.int(row, 3) ?? 0,
                documentID: rows.text(row, 4) ?? "", event: HistoryEvent(rawValue: rows.text(row, 5) ?? "") ?? .edited,
                state: WebhookDelivery.State(rawValue: rows.text(row, 6) ?? "") ?? .pending, attempts: Int(rows.int(row, 7) ?? 0),
                firstAttemptAt: rows.int(row, 8), lastAttemptAt: rows.int(row, 9), nextAttemptAt: rows.int(row, 10) ?? 0,
                lastStatus: rows.int(row, 11).map(Int.init), lastError: rows.text(row, 12), deliveredAt: rows.int(row, 13))
        }
    }

    package func claimDeliveries(now: Int64, leaseUntil: Int64, limit: Int) throws -> [StoredDelivery] {
        Self.deliveries(
            try query(
                """
                UPDATE webhook_deliveries SET claimed_until = $2 WHERE id IN (
                    SELECT d.id FROM webhook_deliveries d
                    WHERE d.state = 'pending' AND d.next_attempt_at <= $1 AND d.claimed_until <= $1
                      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.webhook_id = d.webhook_id
                                      AND e.document_id = d.document_id AND e.state = 'pending' AND e.seq < d.seq)
                    ORDER BY d.next_attempt_at, d.seq LIMIT $3 FOR UPDATE SKIP LOCKED)
                RETURNING \(Self.deliveryColumns)
                """, [.integer(now), .integer(leaseUntil), .integer(Int64(limit))])
        ).sorted { ($0.nextAttemptAt, $0.seq) < ($1.nextAttemptAt, $1.seq) }
    }

    package func finishDelivery(_ id: Int64, _ attempt: DeliveryAttempt) throws {
        try query(
            """
            UPDATE webhook_deliveries SET state = $1, attempts = attempts + 1, first_attempt_at = COALESCE(first_attempt_at, $2),
                last_attempt_at = $2, next_attempt_at = $3, claimed_until = 0, last_status = $4::bigint, last_error = $5,
                delivered_at = CASE WHEN $1 = 'delivered' THEN $2 ELSE delivered_at END
            WHERE id = $6
            """,
            [
                .text(attempt.state.rawValue), .integer(attempt.at), .integer(attempt.nextAttemptAt),
                attempt.status.map { .integer(Int64($0)) } ?? .null, Self.text(attempt.error), .integer(id),
            ])
    }

    package func delivery(_ id: Int64, webhook: Int64) throws -> StoredDelivery? {
        Self.deliveries(
            try query(
                "SELECT \(Self.deliveryColumns) FROM webhook_deliveries WHERE id = $1 AND webhook_id = $2",
                [.integer(id), .integer(webhook)])
        ).first
    }

    package func deliveries(webhook: Int64, state: WebhookDelivery.State?, limit: Int) throws -> [StoredDelivery] {
        guard let state else {
            return Self.deliveries(
                try query(
                    "SELECT \(Self.deliveryColumns) FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id DESC LIMIT $2",
                    [.integer(webhook), .integer(Int64(limit))]))
        }
        return Self.deliveries(
            try query(
                "SELECT \(Self.deliveryColumns) FROM webhook_deliveries WHERE webhook_id = $1 AND state = $2 ORDER BY id DESC LIMIT $3",
                [.integer(webhook), .text(state.rawValue), .integer(Int64(limit))]))
    }

    package func deliveryCounts(webhook: Int64) throws -> (pending: Int, dead: Int) {
        let rows = try query(
            """
            SELECT COUNT(*) FILTER (WHERE state = 'pending'), COUNT(*) FILTER (WHERE state = 'dead')
            FROM webhook_deliveries WHERE webhook_id = $1
            """, [.integer(webhook)])
        return (Int(rows.int(0, 0) ?? 0), Int(rows.int(0, 1) ?? 0))
    }

    package func resendDelivery(_ id: Int64, webhook: Int64, at now: Int64) throws -> Bool {
        try query(
            """
            UPDATE webhook_deliveries SET state = 'pending', attempts = 0, first_attempt_at = NULL, next_attempt_at = $1, claimed_until = 0
            WHERE id = $2 AND webhook_id = $3 AND state = 'dead'
            """, [.integer(now), .integer(id), .integer(webhook)]
        ).affected > 0
    }
}
