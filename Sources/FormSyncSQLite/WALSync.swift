import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Group commit for one WAL database: transactions commit at `synchronous=NORMAL` (their
/// frames are written to the log but not fsynced) and then wait here until one fsync of the log
/// covers them. Writers that commit while an fsync runs share the next one, so N concurrent
/// writers cost about one fsync per round instead of N; each still returns only once its own
/// commit is on disk.
///
/// Commits are numbered by `SQLiteConnection.commitCount`. A writer reads its number right after
/// its commit returned (its frames are then in the log) and passes it to `waitDurable` or
/// `durable`. One fsync started after that number was reported covers it.
///
/// A failed fsync poisons the syncer: after one, Linux may have dropped the dirty pages and a
/// later fsync can succeed without them, so every later wait fails too and the owner must
/// reopen the database (SQLite then recovers the log from what really reached the disk).
package final class WALSync: @unchecked Sendable {
    /// A failed fsync of the log (or of its directory).
    package struct Failure: Error, CustomStringConvertible, Sendable {
        package var path: String
        package var reason: String
        package var description: String { "the write-ahead log \(path) could not be made durable: \(reason)" }
    }

    private let walPath: String
    private let condition = NSCondition()
    /// The highest commit number a waiter has reported, and the highest one made durable.
    private var requested: UInt64 = 0
    private var synced: UInt64 = 0
    private var syncing = false
    private var leadPending = false
    /// `syncLog` asked for a round whatever the commit numbers say.
    private var roundAsked = false
    private var failure: Failure?
    private var descriptor: Int32 = -1
    private var identity: (device: UInt64, inode: UInt64)?
    private var waiters: [(through: UInt64, continuation: CheckedContinuation<Void, Error>)] = []
    private var callbacks: [(through: UInt64, done: @Sendable (Failure?) -> Void)] = []
    /// How many fsyncs ran (tests check that concurrent writers shared them).
    package private(set) var fsyncCount = 0
    /// Time spent in those fsyncs, in nanoseconds (benchmarks report how busy the log was).
    package private(set) var fsyncNanoseconds: UInt64 = 0
    /// Writers suspended in `durable(through:)` now (tests wait for them, not for a guess of time).
    package var suspendedWriters: Int {
        condition.lock()
        defer { condition.unlock() }
        return waiters.count
    }

    private let sync: @Sendable (Int32) -> Int32
    private var beforeRound: (@Sendable () -> UInt64)?
    /// Where an awaited fsync runs: a thread of its own, never one of Swift's cooperative pool,
    /// whose few threads the app's other async work needs while the disk is slow.
    private let queue = DispatchQueue(label: "formsync.wal-sync", qos: .userInitiated)

    /// A syncer for the database at `databasePath` (its log is `databasePath-wal`); `sync`
    /// replaces `fdatasync` in tests of a disk that refuses.
    package init(databasePath: String, sync: @escaping @Sendable (Int32) -> Int32 = WALSync.dataSync) {
        walPath = databasePath + "-wal"
        self.sync = sync
    }

    /// Runs `body` at the start of every fsync round, without this syncer's lock: it commits
    /// whatever its owner holds open for the round (the reference server's batch of writes)
    /// and returns the highest commit number then in the log, which the round makes durable.
    package func commitBeforeEachRound(_ body: @escaping @Sendable () -> UInt64) {
        condition.withLock { beforeRound = body }
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Blocks until commit number `commit` is on disk; the calling thread may run the fsync.
    package func waitDurable(through commit: UInt64) throws {
        condition.lock()
        defer { condition.unlock() }
        requested = max(requested, commit)
        while true {
            if let failure { throw failure }
            if synced >= commit { return }
            if syncing {
                condition.wait()
            } else {
                syncRounds()
            }
        }
    }

    /// Makes everything now in the log durable, whoever wrote it. A database opened after its
    /// last process was killed may hold commits that process made but had not yet fsynced; a
    /// caller that would otherwise find them (an enqueue repeated after a restart) and report
    /// them saved calls this first.
    package func syncLog() throws {
        condition.lock()
        defer { condition.unlock() }
        while syncing { condition.wait() }
        if let failure { throw failure }
        roundAsked = true
        syncRounds()
        if let failure { throw failure }
    }

    /// Suspends until commit number `commit` is on disk. The fsync runs on this syncer's own
    /// queue (not on the cooperative pool), so the caller's actor keeps serving, and
    /// committing, while it waits; writers that commit meanwhile share the next fsync.
    package func durable(through commit: UInt64) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            condition.lock()
            defer { condition.unlock() }
            requested = max(requested, commit)
            if let failure { return continuation.resume(throwing: failure) }
            if synced >= commit { return continuation.resume() }
            waiters.append((commit, continuation))
            // A running round covers every commit requested before it ends; a lead already on
            // its way runs one. Otherwise start one.
            guard !syncing && !leadPending else { return }
            leadPending = true
            queue.async { self.lead() }
        }
    }

    /// Calls `done` once commit number `commit` is on disk (nil) or cannot be (the failure).
    /// When no fsync is running, the calling thread runs it, and calls back every writer it
    /// covered; otherwise it returns at once and the running round calls `done`. A server's
    /// worker thus goes back to its next request instead of sleeping through the fsync.
    package func whenDurable(through commit: UInt64, _ done: @escaping @Sendable (Failure?) -> Void) {
        condition.lock()
        requested = max(requested, commit)
        if let failure {
            condition.unlock()
            return done(failure)
        }
        if synced >= commit {
            condition.unlock()
            return done(nil)
        }
        callbacks.append((commit, done))
        if !syncing && !leadPending { syncRounds() }
        condition.unlock()
    }

    private func lead() {
        condition.lock()
        defer { condition.unlock() }
        leadPending = false
        if !syncing { syncRounds() }
    }

    /// Runs fsyncs until every reported commit is durable (or one fails). Called with the lock
    /// held and `syncing` false; drops the lock around each fsync.
    private func syncRounds() {
        syncing = true
        while failure == nil && (requested > synced || roundAsked) {
            roundAsked = false
            var goal = requested
            condition.unlock()
            if let beforeRound { goal = max(goal, beforeRound()) }
            let start = DispatchTime.now().uptimeNanoseconds
            let outcome = fsyncLog()
            let elapsed = DispatchTime.now().uptimeNanoseconds &- start
            condition.lock()
            fsyncCount += 1
            fsyncNanoseconds &+= elapsed
            switch outcome {
            case .success: synced = max(synced, goal)
            case .failure(let error): failure = error
            }
            resumeWaiters()
            condition.broadcast()
        }
        syncing = false
        resumeWaiters()
        condition.broadcast()
    }

    private func resumeWaiters() {
        if !callbacks.isEmpty {
            let failure = self.failure
            let synced = self.synced
            let ready = callbacks.filter { failure != nil || $0.through <= synced }
            callbacks.removeAll { failure != nil || $0.through <= synced }
            if !ready.isEmpty {
                // Called without the lock: a callback may take its owner's locks, or commit
                // and come back here (it then finds `syncing` set and leaves its call with us).
                condition.unlock()
                for callback in ready { callback.done(failure) }
                condition.lock()
            }
        }
        var remaining: [(through: UInt64, continuation: CheckedContinuation<Void, Error>)] = []
        for waiter in waiters {
            if let failure {
                waiter.continuation.resume(throwing: failure)
            } else if waiter.through <= synced {
                waiter.continuation.resume()
            } else {
                remaining.append(waiter)
            }
        }
        waiters = remaining
    }

    /// A commit's sync of the log: `fdatasync` on Linux (the log's data and size, not its
    /// timestamps), `F_FULLFSYNC` on Apple platforms (`DurableSync.data`).
    package static func dataSync(_ descriptor: Int32) -> Int32 {
        DurableSync.data(descriptor)
    }

    /// The device and inode of `path`. On Linux this asks `statx` for the inode alone: a
    /// `stat` also reads the timestamps, and on a kernel with fine-grained timestamps (6.13 and
    /// later) that makes the next write of the log change its mtime, so that every fsync also
    /// wrote the inode (a second synchronous I/O, 10 % of an enqueue's CPU in `perf`).
    package static func identity(of path: String) -> (device: UInt64, inode: UInt64)? {
        #if os(Linux)
            if let statx = statxFunction {
                // struct statx: stx_mask at 0, stx_ino at 32, stx_dev_major/minor at 136/140.
                var buffer = [UInt64](repeating: 0, count: 32)
                let answer = buffer.withUnsafeMutableBytes { raw -> (device: UInt64, inode: UInt64)? in
                    guard statx(AT_FDCWD, path, 0, statxInode, raw.baseAddress!) == 0 else { return nil }
                    guard raw.load(fromByteOffset: 0, as: UInt32.self) & statxInode != 0 else { return nil }
                    let major = UInt64(raw.load(fromByteOffset: 136, as: UInt32.self))
                    let minor = UInt64(raw.load(fromByteOffset: 140, as: UInt32.self))
                    return (major << 32 | minor, raw.load(fromByteOffset: 32, as: UInt64.self))
                }
                if let answer { return answer }
                if errno != ENOSYS && errno != EINVAL && errno != EPERM { return nil }
            }
        #endif
        var current = stat()
        guard stat(path, &current) == 0 else { return nil }
        return (UInt64(current.st_dev), UInt64(current.st_ino))
    }

    #if os(Linux)
        private typealias Statx = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UInt32, UnsafeMutableRawPointer) -> Int32
        /// glibc's `statx` (2.28 and later), which the Swift overlay does not import.
        private static let statxFunction: Statx? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "statx").map {
            unsafeBitCast($0, to: Statx.self)
        }
        private static let statxInode: UInt32 = 0x100
    #endif

    /// fsyncs the log. The descriptor is opened on first use (the directory is fsynced then, so
    /// the log's own directory entry is durable too) and reopened if the log was replaced.
    private func fsyncLog() -> Result<Void, Failure> {
        guard let now = Self.identity(of: walPath) else {
            return .failure(Failure(path: walPath, reason: "stat: \(String(cString: strerror(errno)))"))
        }
        if descriptor < 0 || identity?.device != now.device || identity?.inode != now.inode {
            if descriptor >= 0 { close(descriptor) }
            descriptor = open(walPath, O_RDWR | O_CLOEXEC)
            guard descriptor >= 0 else { return .failure(Failure(path: walPath, reason: "open: \(String(cString: strerror(errno)))")) }
            identity = now
            // A directory that cannot be opened is left as it was; one that refuses its fsync is a failure.
            do {
                try FolderSync.sync((walPath as NSString).deletingLastPathComponent)
            } catch  where error.call == "fsync" {
                return .failure(Failure(path: walPath, reason: "fsync of its directory: \(error.reason)"))
            } catch {}
        }
        guard sync(descriptor) == 0 else { return .failure(Failure(path: walPath, reason: "fsync: \(String(cString: strerror(errno)))")) }
        return .success(())
    }
}
