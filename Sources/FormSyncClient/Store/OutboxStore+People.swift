import FormSyncSQLite
import Foundation

/// The people of a shared phone (`people`), who owns each item (`item_owners`), and the
/// hand-overs people made (`handovers`).
extension OutboxStore {
    /// One person of the `people` table.
    typealias Person = (principal: String, present: Bool, current: Bool, revoked: String?)

    /// Every person known to the device, whether their credential is on it, the current one,
    /// and why the server revoked their credential, if it did.
    func people() throws -> [Person] {
        try db.query("SELECT principal, present, current, revoked_reason FROM people ORDER BY principal") {
            ($0.text(0) ?? "", $0.int(1) != 0, $0.int(2) != 0, $0.text(3))
        }
    }

    /// Marks `principal`'s credential revoked (and them signed out).
    func revoke(_ principal: String, reason: String) throws {
        try db.run(
            """
            INSERT INTO people (principal, present, current, revoked_reason) VALUES (?, 0, 0, ?)
            ON CONFLICT (principal) DO UPDATE SET present = 0, current = 0, revoked_reason = excluded.revoked_reason
            """, [.text(principal), .text(reason)])
    }

    /// Marks `principal` signed in (their credential is on the device) and, when `current`,
    /// the one capturing from now on.
    /// A person signed in again after a revocation holds a new credential: the mark goes.
    func signIn(_ principal: String, current: Bool) throws {
        if current { try db.run("UPDATE people SET current = 0 WHERE current = 1", []) }
        try db.run(
            """
            INSERT INTO people (principal, present, current) VALUES (?, 1, ?)
            ON CONFLICT (principal) DO UPDATE SET present = 1, current = excluded.current OR current, revoked_reason = NULL
            """, [.text(principal), .integer(current ? 1 : 0)])
    }

    /// Marks `principal` signed out: their items wait for them.
    func signOut(_ principal: String) throws {
        try db.run("UPDATE people SET present = 0, current = 0 WHERE principal = ?", [.text(principal)])
    }

    func setOwner(item: Int64, principal: String) throws {
        try db.run(Self.setOwnerStatement, [.integer(item), .text(principal)])
        ownersExist = true
    }

    static let setOwnerStatement = SQLiteConnection.Statement("INSERT OR REPLACE INTO item_owners (item_id, principal) VALUES (?, ?)")

    /// Records that `by` handed item `item` from `from` to `to`.
    func recordHandover(item: Int64, from: String?, to: String, by: String, at now: Int64) throws {
        try db.run(
            "INSERT INTO handovers (item_id, from_principal, to_principal, by_principal, at) VALUES (?, ?, ?, ?, ?)",
            [.integer(item), from.map(SQLValue.text) ?? .null, .text(to), .text(by), .integer(now)])
    }

    /// Every hand-over of `item`, oldest first.
    func handovers(of item: Int64) throws -> [(from: String?, to: String, by: String, at: Int64)] {
        try db.query(
            "SELECT from_principal, to_principal, by_principal, at FROM handovers WHERE item_id = ? ORDER BY rowid", [.integer(item)]
        ) { ($0.text(0), $0.text(1) ?? "", $0.text(2) ?? "", $0.int(3)) }
    }

    /// The lanes whose head `principal` owns (to look at again when that person signs in or out).
    func lanes(headedBy principal: String) throws -> [(workspace: String, lane: String)] {
        try db.query(
            "SELECT l.workspace, l.lane FROM lanes l JOIN item_owners o ON o.item_id = l.head WHERE o.principal = ?", [.text(principal)]
        ) { ($0.text(0) ?? "", $0.text(1) ?? "") }
    }

    /// Seals every item `principal` owns that has not landed and is not on the wire (as
    /// `sealItems`, for one person of a shared phone), and looks again at the lanes they headed,
    /// where other people's items may wait behind them; how many it sealed.
    func sealItems(ownedBy principal: String, reason: String, now: Int64) throws -> Int {
        let lanes = try self.lanes(headedBy: principal)
        let sealed = try db.run(
            """
            UPDATE items SET state = 'sealed', last_error = ?, updated_at = ?
            WHERE state IN \(Self.sealableStates) AND id IN (SELECT item_id FROM item_owners WHERE principal = ?)
            """, [.text(reason), .integer(now), .text(principal)])
        for (workspace, lane) in lanes { try refreshLane(workspace: workspace, lane: lane) }
        return sealed
    }

    /// The items that produce what `item` depends on and have not landed (its files, say).
    func unlandedProducers(of item: Int64) throws -> [Row] {
        try db.query(
            """
            SELECT \(Self.columns) FROM items WHERE produces IN (SELECT placeholder FROM dependencies WHERE item_id = ?)
            AND state != 'confirmed' ORDER BY id
            """, [.integer(item)], Self.row)
    }
}
