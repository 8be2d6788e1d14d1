import FormSyncSQLite
import Foundation

/// The embedded store's idempotency ledger: each key's request hash and recorded reply, in the
/// `ledger` table, and the keys in flight, in memory. Used under the store's lock.
final class SQLiteLedger: @unchecked Sendable {
    private let db: SQLiteConnection
    /// Keys whose request is being processed now, with their request's hash. Held in memory
    /// only: a key in flight has committed nothing (its work and its recorded reply commit
    /// together), so a server that dies forgets it and the client's retry is processed.
    private var inFlight: [String: Data] = [:]

    init(db: SQLiteConnection) {
        self.db = db
    }

    struct Entry {
        var hash: Data
        /// Nil while the request is still being processed.
        var response: RecordedReply?

        var outcome: LedgerOutcome {
            guard let response else { return .inFlight }
            return .recorded(hash: hash, response: response)
        }
    }

    /// The request `key` names: in flight, or answered with its recorded reply; nil when unknown.
    func entry(_ key: String) -> Entry? {
        if let hash = inFlight[key] { return Entry(hash: hash, response: nil) }
        return
            (try? db.query("SELECT hash, status, headers, body FROM ledger WHERE key = ?", [.text(key)]) { row in
                let hash = row.blob(0) ?? Data()
                guard let status = row.optionalInt(1) else { return Entry(hash: hash, response: nil) }
                return Entry(
                    hash: hash, response: RecordedReply(status: Int(status), headerLines: row.text(2) ?? "", body: row.blob(3) ?? Data()))
            })?.first
    }

    /// Marks `key` in flight (a second request with it gets 409 until it finishes).
    func begin(_ key: String, hash: Data) {
        inFlight[key] = hash
    }

    /// Records the reply to `key`'s request, in the transaction of its work.
    func finish(_ key: String, hash: Data, with response: RecordedReply, at now: Int64) throws {
        try db.run(
            "INSERT INTO ledger (key, hash, status, headers, body, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            [.text(key), .blob(hash), .integer(Int64(response.status)), .text(response.headerLines), .blob(response.body), .integer(now)])
        inFlight[key] = nil
    }

    /// Forgets `key`'s request, whose work did not commit.
    func abandon(_ key: String) {
        inFlight[key] = nil
    }
}
