import FieldForms
import FormSyncModel
import FormSyncSQLite
import FormSyncTesting
import Foundation
import Testing

@testable import FormSyncClient

struct OutboxDurabilityTests {
    @Test func anInvalidPayloadThrowsItsFieldErrorsAndQueuesNothing() async throws {
        let h = try Harness()
        let outbox = try h.open()
        var bad = order(1)
        bad.lines[0].quantity = 0
        await #expect(
            throws: OutboxError.invalidPayload([FieldError(pointer: "#/lines/0/quantity", code: "min", detail: "Must be at least 1.")])
        ) {
            try await outbox.enqueue(bad)
        }
        #expect(await outbox.stateCounts().isEmpty)
        #expect(try await h.open().items(in: Set(SyncState.allCases)).isEmpty)
    }

    @Test func aStashWriteThatFailsThrowsAndStoresNothing() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let stash = h.path + ".stash"
        // The stash folder is replaced by a file: every write into it fails in the kernel (ENOTDIR).
        try FileManager.default.removeItem(atPath: stash)
        try Data().write(to: URL(fileURLWithPath: stash))
        let photo = outbox.placeholderIDs.next()
        var delivery = GeneratedFixtures.delivery()
        delivery.proofPhotos = [FileRef(id: photo)]
        await #expect(throws: OutboxError.self) {
            try await outbox.enqueue(delivery, attachments: [.init(placeholder: photo, source: try h.cameraFile("p.jpg"))])
        }
        #expect(try await outbox.items(in: Set(SyncState.allCases)).isEmpty)
        try FileManager.default.removeItem(atPath: stash)
        #expect(try await h.open().items(in: Set(SyncState.allCases)).isEmpty)
    }

    @Test func aMissingSourceFileThrowsAndStoresNothing() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let photo = outbox.placeholderIDs.next()
        var delivery = GeneratedFixtures.delivery()
        delivery.proofPhotos = [FileRef(id: photo)]
        do {
            try await outbox.enqueue(
                delivery, attachments: [.init(placeholder: photo, source: h.directory.appendingPathComponent("gone.jpg"))])
            Issue.record("enqueue succeeded without its file")
        } catch OutboxError.stashFailed(let path, _) {
            #expect(path.hasSuffix("gone.jpg"))
        }
        #expect(try await outbox.items(in: Set(SyncState.allCases)).isEmpty)
    }

    @Test func aCommitThatFailsThrowsRemovesTheStashedCopiesAndStoresNothing() async throws {
        let h = try Harness()
        let outbox = try h.open()
        // A second connection makes the database refuse submissions, as a full disk would.
        let saboteur = try SQLiteConnection(path: h.path)
        try saboteur.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON items WHEN NEW.kind = 'submission' BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
        let photo = outbox.placeholderIDs.next()
        var delivery = GeneratedFixtures.delivery()
        delivery.proofPhotos = [FileRef(id: photo)]
        do {
            try await outbox.enqueue(delivery, attachments: [.init(placeholder: photo, source: try h.cameraFile("p.jpg"))])
            Issue.record("a refused commit was reported as saved")
        } catch OutboxError.storage(let error) {
            #expect(error.message.contains("disk is full"))
            #expect(error.code == 1811)  // SQLITE_CONSTRAINT_TRIGGER
            #expect(error.sql.contains("INSERT INTO items"))
            #expect(!error.sql.contains("DeliveryConfirmation"))  // bound values never appear
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: h.path + ".stash").isEmpty)
        try saboteur.execute("DROP TRIGGER refuse")
        #expect(try await h.open().items(in: Set(SyncState.allCases)).isEmpty)
    }

    @Test func theDatabaseIsInWALModeAndRecordsItsMigrations() throws {
        let h = try Harness()
        _ = try h.open()
        let db = try SQLiteConnection(path: h.path)
        #expect(try db.query("PRAGMA journal_mode") { $0.text(0) } == ["wal"])
        #expect(
            try db.query("SELECT version, name FROM migrations") { "\($0.int(0)) \($0.text(1) ?? "")" } == [
                "1 outbox", "2 workspace walls, sends, documents", "3 records", "4 attempt history", "5 record tombstones",
                "6 leased items index", "7 lean items", "8 resolved by server id", "9 record keys", "10 deferred files",
                "11 revocation", "12 people", "13 reviews", "14 drafts", "15 item records",
                "16 subscriptions",
            ])
        _ = try h.open()  // a second open applies nothing twice
        #expect(try db.query("SELECT COUNT(*) FROM migrations") { $0.int(0) } == [Int64(OutboxMigrations.all.latestVersion)])
    }

    @Test func identitiesAreUniqueAcrossProcessRestarts() async throws {
        let h = try Harness()
        let clock = ManualClock(1_800_000_000_000)  // frozen: restarts happen within one millisecond
        func open() throws -> Outbox {
            try Outbox(
                path: h.path, forms: Harness.forms, transport: h.transport,
                environment: OutboxEnvironment(now: { clock.now }, random: { 0.5 }, newID: OutboxEnvironment.live.newID))
        }
        var documents: Set<String> = []
        var attempts: Set<String> = []
        var placeholders: Set<Int64> = []
        for _ in 0..<3 {
            let outbox = try open()
            for _ in 0..<1500 { placeholders.insert(outbox.placeholderIDs.next()) }
            let created = outbox.placeholderIDs.next()
            placeholders.insert(created)
            try await outbox.enqueue(NewCustomer(name: "Ana", segment: .retail), creates: created)
            for item in try await outbox.items(in: Set(SyncState.allCases)) {
                documents.insert(item.documentID)
                attempts.insert(item.attemptID)
            }
        }
        #expect(documents.count == 3)
        #expect(attempts.count == 3)
        #expect(placeholders.count == 3 * 1501)
        #expect(placeholders.allSatisfy { $0 < 0 && -$0 < (1 << 53) })
    }
}
