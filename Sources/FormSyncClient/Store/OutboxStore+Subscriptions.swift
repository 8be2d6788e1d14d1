import FormSyncSQLite
import Foundation

/// Subscriptions, their cursors and the records each holds (`subscriptions`,
/// `subscription_records`).
extension OutboxStore {
    /// A subscription as kept.
    struct SubscriptionRow: Equatable {
        var name: String
        var type: String
        /// The subscription's JSON as the feed takes it.
        var query: String
        var priority: Int
        var expiresAt: Int64
        var cursor: String?
    }

    func subscriptions(view: String) throws -> [SubscriptionRow] {
        try db.query(
            "SELECT name, type, query, priority, expires_at, cursor FROM subscriptions WHERE view = ? ORDER BY priority DESC, name",
            [.text(view)]
        ) { row in
            SubscriptionRow(
                name: row.text(0) ?? "", type: row.text(1) ?? "", query: row.text(2) ?? "", priority: Int(row.int(3)),
                expiresAt: row.int(4), cursor: row.text(5))
        }
    }

    /// Writes a subscription; one whose query changed starts its feed again from the start and
    /// holds no record until that feed brings them.
    func saveSubscription(_ row: SubscriptionRow, view: String) throws {
        let old = try subscriptions(view: view).first { $0.name == row.name }
        if let old, old.query != row.query || old.type != row.type { try dropSubscriptionRecords(view: view, name: row.name) }
        let cursor = old.flatMap { $0.query == row.query && $0.type == row.type ? $0.cursor : nil }
        try db.run(
            "INSERT OR REPLACE INTO subscriptions (view, name, type, query, priority, expires_at, cursor) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                .text(view), .text(row.name), .text(row.type), .text(row.query), .integer(Int64(row.priority)), .integer(row.expiresAt),
                cursor.map(SQLValue.text) ?? .null,
            ])
    }

    /// Removes a subscription and its hold on records; false when there was none.
    @discardableResult
    func removeSubscription(view: String, name: String) throws -> Bool {
        try dropSubscriptionRecords(view: view, name: name)
        return try db.run("DELETE FROM subscriptions WHERE view = ? AND name = ?", [.text(view), .text(name)]) > 0
    }

    /// Where a subscription's feed resumes (nil: from the start, or no such subscription).
    func subscriptionCursor(view: String, name: String) throws -> String? {
        try db.query("SELECT cursor FROM subscriptions WHERE view = ? AND name = ?", [.text(view), .text(name)]) { $0.text(0) }.first
            ?? nil
    }

    func setSubscriptionCursor(_ cursor: String, view: String, name: String) throws {
        try db.run("UPDATE subscriptions SET cursor = ? WHERE view = ? AND name = ?", [.text(cursor), .text(view), .text(name)])
    }

    /// Notes that the subscription holds the record (a subscription removed meanwhile holds none).
    func holdRecord(view: String, subscription: String, type: String, id: Int64) throws {
        try db.run(
            """
            INSERT OR IGNORE INTO subscription_records (view, name, type, id)
            SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM subscriptions WHERE view = ?1 AND name = ?2)
            """, [.text(view), .text(subscription), .text(type), .integer(id)])
    }

    /// Notes that the subscription no longer holds the record (`subscription` nil: none does).
    func releaseRecord(view: String, subscription: String?, type: String, id: Int64) throws {
        if let subscription {
            try db.run(
                "DELETE FROM subscription_records WHERE view = ? AND name = ? AND type = ? AND id = ?",
                [.text(view), .text(subscription), .text(type), .integer(id)])
        } else {
            try db.run(
                "DELETE FROM subscription_records WHERE view = ? AND type = ? AND id = ?", [.text(view), .text(type), .integer(id)])
        }
    }

    /// Forgets which records a subscription holds and where its feed was (its feed starts again).
    func dropSubscriptionRecords(view: String, name: String) throws {
        try db.run("DELETE FROM subscription_records WHERE view = ? AND name = ?", [.text(view), .text(name)])
        try db.run("UPDATE subscriptions SET cursor = NULL WHERE view = ? AND name = ?", [.text(view), .text(name)])
    }

    /// The ids of the stored records of `type` in `view` that no subscription holds.
    func unheldRecords(view: String, type: String) throws -> [Int64] {
        try db.query(
            """
            SELECT r.id FROM records r WHERE r.view = ?1 AND r.type = ?2
            AND NOT EXISTS (SELECT 1 FROM subscription_records s WHERE s.view = ?1 AND s.type = ?2 AND s.id = r.id)
            """, [.text(view), .text(type)]
        ) { $0.int(0) }
    }

    /// How many records each subscription of `view` holds, by name.
    func subscriptionRecordCounts(view: String) throws -> [String: Int] {
        Dictionary(
            try db.query("SELECT name, COUNT(*) FROM subscription_records WHERE view = ? GROUP BY name", [.text(view)]) {
                ($0.text(0) ?? "", Int($0.int(1)))
            }, uniquingKeysWith: { a, _ in a })
    }
}
