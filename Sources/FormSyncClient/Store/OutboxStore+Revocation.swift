import FormSyncSQLite
import Foundation

/// The device's revocation (`revocation`), and the items it seals.
extension OutboxStore {
    func revocation() throws -> (reason: String, at: Int64)? {
        try db.query("SELECT reason, revoked_at FROM revocation WHERE id = 1") { ($0.text(0) ?? "", $0.int(1)) }.first
    }

    func setRevocation(reason: String, at now: Int64) throws {
        try db.run("INSERT OR IGNORE INTO revocation (id, reason, revoked_at) VALUES (1, ?, ?)", [.text(reason), .integer(now)])
    }

    func clearRevocation() throws {
        try db.run("DELETE FROM revocation", [])
    }

    /// Seals every item of every workspace that has not landed and is not on the wire now
    /// (pending, parked or blocked), and drops the lanes they headed; how many it sealed. A lane
    /// whose head is on the wire ends with it, since nothing open is left behind it.
    func sealItems(reason: String, now: Int64) throws -> Int {
        let sealed = try db.run(
            "UPDATE items SET state = 'sealed', last_error = ?, updated_at = ? WHERE state IN \(Self.sealableStates)",
            [.text(reason), .integer(now)])
        try db.run("DELETE FROM lanes WHERE head IN (SELECT id FROM items WHERE state = 'sealed')", [])
        return sealed
    }

    /// The stored states of an item that has not landed and is not on the wire: what a
    /// revocation seals.
    static let sealableStates = "('pending', 'rejected', 'conflict', 'exhausted', 'blocked')"
}
