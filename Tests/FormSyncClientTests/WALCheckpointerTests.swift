import FormSyncClient
import FormSyncSQLite
import FormSyncTesting
import Foundation
import Testing

/// Checkpoints off the writer's path: the log is copied back by a second connection, bounded
/// when that connection cannot keep up, and a database removed meanwhile is never brought back.
struct WALCheckpointerTests {
    func folder() throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("walcheckpoint-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder.path
    }

    func logFrames(_ path: String) -> Int {
        let bytes = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        return bytes / (4096 + 24)
    }

    /// A database with one table, its log checkpointed in the background past `threshold` frames.
    func database(threshold: Int) throws -> (db: SQLiteConnection, path: String, checkpointer: WALCheckpointer) {
        let path = try folder() + "/db.sqlite"
        let db = try SQLiteConnection(path: path, backgroundCheckpointFrames: threshold)
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)")
        return (db, path, try #require(db.checkpointer))
    }

    /// Runs `body` with `value` on the checkpointer's queue after its next pass, once, while the
    /// test thread waits for the queue.
    func afterNextPass<Value>(_ checkpointer: WALCheckpointer, with value: Value, _ body: @escaping @Sendable (Value) -> Void) {
        let box = UncheckedBox(value)
        checkpointer.afterEachPass {
            checkpointer.afterEachPass(nil)
            body(box.value)
        }
    }

    /// Commits of a row a page each, at NORMAL (no fsync: only the log's growth matters here).
    func commit(_ db: SQLiteConnection, _ count: Int) throws {
        for _ in 0..<count { _ = try db.transaction(.normal) { try db.run("INSERT INTO t (body) VALUES (randomblob(3000))") } }
    }

    @Test func commitsThatFillTheLogAreCheckpointedByASecondConnectionAndTheLogIsReused() async throws {
        try await OffThePool.run {
            let (db, path, checkpointer) = try database(threshold: 200)
            // Bursts of commits with pauses: each pause lets the checkpointer copy every frame
            // (the last ones included), so the next burst starts the log over. A burst writes about
            // 300 frames (a leaf, its parent's cell and page 1 per commit): past the threshold, and
            // under the writer's own limit (800) even when a loaded machine gives the checkpointer
            // no time until the burst ends (bursts of 200 reached it in a CI run).
            for _ in 0..<40 {
                try commit(db, 100)
                checkpointer.waitUntilIdle()
            }
            #expect(checkpointer.checkpoints > 0, "the second connection checkpointed")
            #expect(checkpointer.writerCheckpoints == 0, "the writer never had to")
            // 4,000 commits of a page each: without checkpoints the log would hold over 4,000 frames.
            #expect(logFrames(path) < 800, "the log was reused from its start: \(logFrames(path)) frames")
            #expect(try db.query("SELECT COUNT(*) FROM t") { $0.int(0) }.first == 4000)
        }
    }

    @Test func framesAPassCouldNotCopyAreCopiedSoonAfterSoTheLogStartsOver() throws {
        let (db, path, checkpointer) = try database(threshold: 200)
        checkpointer.suspend()
        try commit(db, 50)
        // A reader holds a snapshot: the pass cannot copy the frames committed after it.
        let reader = try SQLiteConnection(path: path)
        try reader.run("BEGIN")
        _ = try reader.query("SELECT COUNT(*) FROM t") { $0.int(0) }
        // Up to the threshold and no further: one commit asks for a pass, none for another.
        while logFrames(path) < 200 { try commit(db, 1) }
        // The test thread waits while the queue runs the pass, and then this hook, which ends
        // the read: the frames left are too few to ask for a pass, and no commit follows.
        afterNextPass(checkpointer, with: reader) { reader in _ = try? reader.run("COMMIT") }
        checkpointer.resume()
        checkpointer.waitUntilIdle()
        try commit(db, 1)
        let log = try db.query("PRAGMA wal_checkpoint(PASSIVE)") { $0.int(1) }.first ?? nil
        #expect((log ?? 999) < 10, "the last commit went to the start of the log, not after \(log ?? -1) frames")
        #expect(checkpointer.checkpoints == 2, "the pass, then the one for the frames it left")
    }

    @Test func enoughFramesCommittedDuringAPassAskForAnotherAtOnce() throws {
        let (db, _, checkpointer) = try database(threshold: 200)
        checkpointer.suspend()
        try commit(db, 250)
        // Sixty one-page commits while the run is under way: more than a quarter threshold.
        afterNextPass(checkpointer, with: db) { writer in
            for _ in 0..<60 { _ = try? writer.transaction(.normal) { try writer.run("INSERT INTO t (body) VALUES (randomblob(3000))") } }
        }
        checkpointer.resume()
        checkpointer.waitForQueuedPasses()
        #expect(checkpointer.checkpoints == 2, "the second pass ran in the same run, not 50 ms later")
        checkpointer.waitUntilIdle()
    }

    @Test func aCheckpointerHeldBackLeavesTheWriterToCheckpointAtFourTimesItsThreshold() async throws {
        try await OffThePool.run {
            let (db, path, checkpointer) = try database(threshold: 100)
            checkpointer.suspend()
            try commit(db, 4000)
            checkpointer.resume()
            #expect(checkpointer.writerCheckpoints > 0)
            // The writer checkpointed at 400 frames and then reused the log from its start.
            #expect(logFrames(path) <= 420, "the log stayed bounded: \(logFrames(path)) frames")
            #expect(try db.query("SELECT COUNT(*) FROM t") { $0.int(0) }.first == 4000)
        }
    }

    @Test func theCheckpointerNeverRecreatesADatabaseRemovedUnderIt() throws {
        let path = try folder() + "/db.sqlite"
        var db: SQLiteConnection? = try SQLiteConnection(path: path, backgroundCheckpointFrames: 100)
        try db!.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)")
        for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
        try commit(db!, 300)
        db = nil  // closing waits for a checkpoint under way
        #expect(!FileManager.default.fileExists(atPath: path), "no empty database appeared in its place")
    }

    @Test func anOutboxLeavesItsCheckpointsToASecondConnection() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let checkpointer = try #require(outbox.checkpointer)
        var enqueued = 0
        while checkpointer.checkpoints == 0 && enqueued < 3000 {
            try await outbox.enqueue(order(Int64(enqueued % 50 + 1)))
            enqueued += 1
        }
        #expect(checkpointer.checkpoints > 0, "after \(enqueued) enqueues")
        #expect(checkpointer.writerCheckpoints == 0)
    }
}

/// Hands the writer's connection to the checkpointer's queue while the test thread waits.
private struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
