import FieldForms
import FormSyncModel
import FormSyncSQLite
import Foundation
import Testing

@testable import FormSyncClient

/// Migration 7 rebuilds `items` lean (no `AUTOINCREMENT`, partial indexes): an outbox written
/// before it keeps every item, its dependencies and its counts, and no item id is given out twice.
@Suite struct LeanItemsMigrationTests {
    /// Builds an outbox file at schema version 6, as the build before the lean table left it.
    static func version6Outbox(at path: String) throws {
        let db = try SQLiteConnection(path: path)
        try db.execute("PRAGMA application_id = \(OutboxStore.applicationID)")
        try SQLiteMigrator(migrations: Array(OutboxMigrations.all.migrations.filter { $0.version <= 6 })).migrate(db, now: 0)
        let payload = try FormRegistry.encode(order(1))
        func insert(_ state: String, lane: String, produces: Int64? = nil) throws -> Int64 {
            try db.run(
                """
                INSERT INTO items (kind, workspace, lane, document_id, attempt_id, form, form_version, payload, produces, state, next_attempt_at,
                    lease_expires_at, created_at, updated_at, sends)
                VALUES ('submission', 'acme', ?, ?, ?, 'SalesOrder', ?, ?, ?, ?, 0, ?, 0, 0, ?)
                """,
                [
                    .text(lane), .text("doc-\(state)-\(lane)"), .text("key-\(state)-\(lane)"), .integer(Int64(SalesOrder.formVersion)),
                    .blob(payload), produces.map(SQLValue.integer) ?? .null, .text(state), state == "leased" ? .integer(1) : .null,
                    .integer(state == "pending" ? 0 : 1),
                ])
            return db.lastInsertRowID
        }
        let pending = try insert("pending", lane: "Customer:1")
        _ = try insert("confirmed", lane: "Customer:2")
        _ = try insert("rejected", lane: "Customer:3")
        let waiting = try insert("pending", lane: "Customer:4")
        try db.run("INSERT INTO dependencies (item_id, placeholder) VALUES (?, -7)", [.integer(waiting)])
        let newest = try insert("pending", lane: "Customer:5")
        try db.run("DELETE FROM items WHERE id = ?", [.integer(newest)])  // AUTOINCREMENT remembers it; max(id) alone would not
        try db.run("INSERT INTO lanes (workspace, lane, head, due_at) VALUES ('acme', 'Customer:1', ?, 0)", [.integer(pending)])
        try db.run("INSERT INTO lanes (workspace, lane, head, due_at) VALUES ('acme', 'Customer:4', ?, NULL)", [.integer(waiting)])
        #expect(newest == 5)
    }

    @Test func anOutboxOfSchema6KeepsItsItemsDependenciesAndCountsAndNeverReusesAnId() async throws {
        let h = try Harness()
        try Self.version6Outbox(at: h.path)
        let outbox = try h.open()
        let items = try await outbox.items(in: Set(SyncState.allCases))
        #expect(items.map(\.id) == [1, 2, 3, 4])
        #expect(items.map(\.state) == [.savedOnDevice, .confirmed, .rejected, .savedOnDevice])
        var snapshots = await outbox.snapshots().makeAsyncIterator()
        #expect(await snapshots.next()?.counts == [.savedOnDevice: 2, .confirmed: 1, .rejected: 1])
        let db = try SQLiteConnection(path: h.path)
        #expect(try db.query("SELECT item_id, placeholder FROM dependencies") { "\($0.int(0)) \($0.int(1))" } == ["4 -7"])
        let schema = try db.query("SELECT sql FROM sqlite_master WHERE name = 'items'") { $0.text(0) ?? "" }.first ?? ""
        #expect(!schema.contains("AUTOINCREMENT"))
        #expect(!schema.contains("UNIQUE"))
        // The deleted item 5 stays spent: the next enqueue is item 6.
        #expect(try await outbox.enqueue(order(6)) == 6)
        // The waiting item still waits for its placeholder; the pending one and the new one go.
        #expect(await outbox.flush().sent == 2)
        #expect(h.transport.requests.map(\.attemptID).first == "key-pending-Customer:1")
    }

    @Test func anIdOfADiscardedOrPurgedNewestItemIsNeverGivenOutAgainEvenAfterAReopen() async throws {
        let h = try Harness()
        var outbox = try h.open()
        let first = try await outbox.enqueue(order(1))
        let second = try await outbox.enqueue(order(2))
        #expect(await outbox.flush().sent == 2)
        h.clock.advance(by: 10_000)
        #expect(try await outbox.purgeConfirmed(acknowledgedBefore: Date(millisecondsSince1970: h.clock.now)) == 2)
        outbox = try h.open()
        let third = try await outbox.enqueue(order(3))
        #expect(third > second && second > first)
        h.transport.script(.rejected(reason: "HTTP 422", fieldErrors: []))
        _ = await outbox.flush()
        #expect(try await outbox.item(third)?.state == .rejected)
        try await outbox.discard(third)
        outbox = try h.open()
        #expect(try await outbox.enqueue(order(4)) == ItemID(third.rawValue + 1))
    }

    @Test func countsAtOpenComeFromTheStateIndexesInTheirOrderNotFromTheRows() throws {
        let h = try Harness()
        _ = try h.open()
        let db = try SQLiteConnection(path: h.path)
        func plan(_ query: String) throws -> [String] {
            try db.query("EXPLAIN QUERY PLAN " + query) { $0.text(3) ?? "" }
        }
        for query in [OutboxStore.openCountQuery, OutboxStore.settledCountQuery] {
            let steps = try plan(query)
            #expect(steps.contains { $0.contains("COVERING INDEX") }, "\(steps)")
            #expect(!steps.contains { $0.contains("TEMP B-TREE") }, "\(steps)")  // no sort of every open item
        }
        #expect(try plan(OutboxStore.leasedCountQuery).contains { $0.contains("items_leased") })
    }

    @Test func countsAtOpenSplitOpenItemsIntoPendingAndLeased() async throws {
        let h = try Harness()
        var outbox = try h.open()
        for n in 1...3 { try await outbox.enqueue(order(Int64(n))) }
        h.transport.script(.hang)
        let flush = Task { [outbox] in await outbox.flush() }
        while h.transport.hangingCount < 1 { try await Task.sleep(for: .milliseconds(5)) }
        outbox = try h.open()  // another process's view: one item leased, two pending
        var snapshots = await outbox.snapshots().makeAsyncIterator()
        let counts = await snapshots.next()?.counts ?? [:]
        #expect(counts.values.reduce(0, +) == 3)
        #expect((counts[.sending] ?? 0) + (counts[.sent] ?? 0) >= 1)
        h.transport.release(.unreachable(reason: "test over"))
        _ = await flush.value
    }
}
