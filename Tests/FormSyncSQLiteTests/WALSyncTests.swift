import FormSyncSQLite
import FormSyncTesting
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The group commit under enqueue and the reference server: commits at NORMAL made durable by
/// one shared fsync of the log.
struct WALSyncTests {
    func database() throws -> (SQLiteConnection, String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("walsync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("db.sqlite").path
        let db = try SQLiteConnection(path: path)
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)")
        return (db, path)
    }

    func commit(_ db: SQLiteConnection) throws -> UInt64 {
        _ = try db.transaction(.normal) { try db.run("INSERT INTO t (body) VALUES (randomblob(2000))") }
        return db.commitCount
    }

    @Test func aCommitIsNumberedOnlyOnceItsStatementHasFinished() async throws {
        try await OffThePool.run {
            let (db, _) = try database()
            let before = db.commitCount
            try db.transaction(.normal) {
                try db.run("INSERT INTO t (body) VALUES (randomblob(10))")
                #expect(db.commitCount == before, "nothing is committed inside the transaction")
            }
            #expect(db.commitCount == before + 1)
            try db.run("INSERT INTO t (body) VALUES (randomblob(10))")
            #expect(db.commitCount == before + 2, "an autocommit statement is a commit too")
            struct Abandon: Error {}
            #expect(throws: Abandon.self) {
                try db.transaction(.normal) {
                    try db.run("INSERT INTO t (body) VALUES (1)")
                    throw Abandon()
                }
            }
            #expect(db.commitCount == before + 2, "a rolled-back transaction is not numbered")
            _ = try db.query("SELECT COUNT(*) FROM t") { $0.int(0) }
            #expect(db.commitCount == before + 2, "a read commits nothing")
        }
    }

    @Test func oneFsyncCoversEveryCommitReportedBeforeIt() async throws {
        try await OffThePool.run {
            let (db, path) = try database()
            let syncs = Mutex(0)
            let wal = WALSync(databasePath: path) { descriptor in
                syncs.withLock { $0 += 1 }
                return WALSync.dataSync(descriptor)
            }
            var numbers: [UInt64] = []
            for _ in 0..<10 { numbers.append(try commit(db)) }
            #expect(numbers == numbers.sorted() && Set(numbers).count == 10, "each commit gets its own, rising number")
            try wal.waitDurable(through: numbers.last!)
            #expect(syncs.withLock { $0 } == 1)
            for number in numbers { try wal.waitDurable(through: number) }
            #expect(syncs.withLock { $0 } == 1, "earlier commits were covered by the same fsync")
            try wal.waitDurable(through: try commit(db))
            #expect(syncs.withLock { $0 } == 2, "a later commit needs a fsync of its own")
        }
    }

    @Test func waitersThatArriveDuringAnFsyncShareTheNextOne() async throws {
        let (db, path) = try database()
        let syncs = Mutex(0)
        let release = DispatchSemaphore(value: 0)
        let wal = WALSync(databasePath: path) { descriptor in
            // The first fsync is held until the other writers wait behind it.
            if syncs.withLock({
                $0 += 1
                return $0
            }) == 1 {
                release.wait()
            }
            return WALSync.dataSync(descriptor)
        }
        let first = try commit(db)
        // The held fsync blocks a thread of its own, never one of the concurrency pool's.
        let firstDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            try? wal.waitDurable(through: first)
            firstDone.signal()
        }
        while syncs.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(1)) }
        let later = try (0..<5).map { _ in try commit(db) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for number in later { group.addTask { try await wal.durable(through: number) } }
            // Every later writer is waiting behind the held fsync before it ends.
            while wal.suspendedWriters < later.count { try await Task.sleep(for: .milliseconds(1)) }
            release.signal()
            try await group.waitForAll()
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                firstDone.wait()
                continuation.resume()
            }
        }
        #expect(syncs.withLock { $0 } == 2, "five writers that waited during one fsync shared a single next one")
    }

    @Test func aCallbackWriterGoesOnWhileAnotherThreadsFsyncRunsAndIsCalledBackWhenItsCommitIsDurable() async throws {
        try await OffThePool.run {
            let (db, path) = try database()
            let syncs = Mutex(0)
            let started = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let wal = WALSync(databasePath: path) { descriptor in
                if syncs.withLock({
                    $0 += 1
                    return $0
                }) == 1 {
                    started.signal()
                    release.wait()
                }
                return WALSync.dataSync(descriptor)
            }
            let durable = Mutex<[UInt64]>([])
            let first = try commit(db)
            let firstReturned = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                // No fsync is running: this thread runs it, and is held inside it.
                wal.whenDurable(through: first) { failure in
                    #expect(failure == nil)
                    durable.withLock { $0.append(first) }
                }
                firstReturned.signal()
            }
            try #require(started.wait(timeout: .now() + 10) == .success, "the first writer ran an fsync")
            let later = try (0..<5).map { _ in try commit(db) }
            for number in later {
                // Returns at once: the running round's thread calls back.
                wal.whenDurable(through: number) { failure in
                    #expect(failure == nil)
                    durable.withLock { $0.append(number) }
                }
            }
            #expect(durable.withLock { $0 }.isEmpty, "nothing is called back before an fsync covers it")
            release.signal()
            #expect(firstReturned.wait(timeout: .now() + 10) == .success)
            #expect(durable.withLock { $0 } == [first] + later, "the first fsync's writer, then the five that shared the next")
            #expect(syncs.withLock { $0 } == 2)
            let already = Mutex(false)
            wal.whenDurable(through: later.last!) { _ in already.withLock { $0 = true } }
            #expect(already.withLock { $0 }, "a commit already durable is called back at once, on the caller's thread")
            #expect(syncs.withLock { $0 } == 2)
        }
    }

    @Test func aFailedFsyncCallsBackItsWritersWithTheFailure() async throws {
        try await OffThePool.run {
            let (db, path) = try database()
            let wal = WALSync(databasePath: path) { _ in
                errno = EIO
                return -1
            }
            let failures = Mutex<[String]>([])
            wal.whenDurable(through: try commit(db)) { failure in failures.withLock { $0.append(failure?.reason ?? "none") } }
            wal.whenDurable(through: try commit(db)) { failure in failures.withLock { $0.append(failure?.reason ?? "none") } }
            let reasons = failures.withLock { $0 }
            #expect(reasons.count == 2 && reasons.allSatisfy { $0.contains("fsync") }, "\(reasons)")
        }
    }

    @Test func aFailedFsyncFailsItsWritersAndEveryLaterOne() async throws {
        try await OffThePool.run {
            let (db, path) = try database()
            let failing = Mutex(true)
            let wal = WALSync(databasePath: path) { descriptor in
                if failing.withLock({ $0 }) {
                    errno = EIO
                    return -1
                }
                return WALSync.dataSync(descriptor)
            }
            let number = try commit(db)
            #expect(throws: WALSync.Failure.self) { try wal.waitDurable(through: number) }
            failing.withLock { $0 = false }
            // The kernel may have dropped the pages the failed fsync was to write: a later fsync
            // that succeeds proves nothing about them, so the syncer stays failed.
            #expect(throws: WALSync.Failure.self) { try wal.waitDurable(through: try commit(db)) }
        }
    }

    @Test func theLogsIdentityIsItsDeviceAndInodeAsStatSeesThem() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("walsync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("log").path
        #expect(WALSync.identity(of: path) == nil, "a missing file has no identity")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("one".utf8)))
        let first = try #require(WALSync.identity(of: path))
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(first.inode == UInt64(info.st_ino))
        #expect(WALSync.identity(of: path)?.device == first.device)
        #expect(FileManager.default.createFile(atPath: path + ".new", contents: Data("two".utf8)))
        #expect(rename(path + ".new", path) == 0)
        let second = try #require(WALSync.identity(of: path))
        #expect(second.inode != first.inode, "a replaced file is another file")
        #expect(second.device == first.device)
    }

    @Test func aReplacedLogIsReopenedBeforeItIsSynced() throws {
        let (db, path) = try database()
        let synced = Mutex<[UInt64]>([])
        let wal = WALSync(databasePath: path) { descriptor in
            var info = stat()
            fstat(descriptor, &info)
            synced.withLock { $0.append(UInt64(info.st_ino)) }
            return WALSync.dataSync(descriptor)
        }
        try wal.waitDurable(through: try commit(db))
        // Another log takes the old one's place (as when the last connection closed and a new
        // one made a fresh log): the syncer must fsync the file that is there now.
        #expect(rename(path + "-wal", path + "-wal.old") == 0)
        #expect(FileManager.default.createFile(atPath: path + "-wal", contents: Data()))
        let replaced = try #require(WALSync.identity(of: path + "-wal"))
        try wal.waitDurable(through: db.commitCount + 1)
        #expect(synced.withLock { $0 }.count == 2)
        #expect(synced.withLock { $0 }.last == replaced.inode)
        #expect(synced.withLock { $0 }.first != replaced.inode)
    }
}
