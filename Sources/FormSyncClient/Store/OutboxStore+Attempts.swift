import FormSyncSQLite
import Foundation

/// The attempt history: what became of each attempt of an item, the newest `kept` of them.
extension OutboxStore {

    /// How many attempts of one item are remembered.
    static let keptAttempts = 20

    /// Adds the outcome of one send. `sends` is how many times the item was sent: an item has
    /// at most one record per send, so the oldest are trimmed only once it was sent more than
    /// `keptAttempts` times.
    func recordAttempt(item: Int64, sends: Int, _ record: AttemptRecord) throws {
        try db.run(
            Self.recordAttemptStatement,
            [
                .integer(item), .integer(record.at.millisecondsSince1970), .text(record.outcome),
                record.status.map { .integer(Int64($0)) } ?? .null,
                record.reason.map { .text(String($0.prefix(1000))) } ?? .null, .integer(record.duration.clampedMilliseconds),
            ])
        guard sends > Self.keptAttempts else { return }
        try db.run(
            """
            DELETE FROM attempts WHERE item_id = ? AND rowid NOT IN (SELECT rowid FROM attempts WHERE item_id = ? ORDER BY rowid DESC LIMIT ?)
            """, [.integer(item), .integer(item), .integer(Int64(Self.keptAttempts))])
    }

    static let recordAttemptStatement = SQLiteConnection.Statement(
        "INSERT INTO attempts (item_id, at, outcome, status, reason, milliseconds) VALUES (?, ?, ?, ?, ?, ?)")

    func attempts(of item: Int64) throws -> [AttemptRecord] {
        try db.query("SELECT at, outcome, status, reason, milliseconds FROM attempts WHERE item_id = ? ORDER BY rowid", [.integer(item)]) {
            AttemptRecord(
                at: Date(millisecondsSince1970: $0.int(0)), outcome: $0.text(1) ?? "", status: $0.optionalInt(2).map(Int.init),
                reason: $0.text(3),
                duration: .milliseconds($0.int(4)))
        }
    }

    func forgetAttempts(of item: Int64) throws {
        try db.run("DELETE FROM attempts WHERE item_id = ?", [.integer(item)])
    }
}
