import CSQLite
import Foundation
import Synchronization

/// Checkpoints a WAL database from a thread of its own. SQLite's automatic checkpoint runs
/// inside the commit that takes the log past its threshold, so that one commit (an enqueue, a
/// lease, a page of a pull, a batch of the server's writes) also copies the log back into the
/// database file and fsyncs it. Here the writer's commit only signals, and a second connection
/// copies the log with a passive checkpoint, which never blocks the writer, while the writer
/// goes on.
///
/// The writer reuses the log from its start only when a transaction begins with every frame
/// copied, which a busy writer rarely lets a second connection achieve. So once the log holds
/// four times the threshold, the writer checkpoints itself, as SQLite would, but by then only
/// the frames committed since the last pass are left to copy: the log stays bounded (16 MB
/// with the default threshold of 1,000 frames) and the writer pays a fraction of each copy.
/// Durability does not change: a commit is durable once the log is fsynced, and a checkpoint
/// fsyncs the database file before the log can be reused.
package final class WALCheckpointer: @unchecked Sendable {
    private struct State {
        /// A run of passes is queued or under way.
        var scheduled = false
        /// A commit asked for a pass while one ran: run another after it.
        var again = false
        /// A pass for the log's last frames is due shortly.
        var tailPending = false
        var closed = false
        /// The log's frame count when the last pass had copied all of it.
        var copiedThrough: Int32 = 0
        /// The log's frame count after the last commit.
        var latest: Int32 = 0
        /// Run after each pass (tests make commits land after a pass with it).
        var afterPass: (@Sendable () -> Void)?

        /// Whether the log holds frames past `threshold` that no pass has copied.
        func leavesFrames(past threshold: Int32) -> Bool { latest >= threshold && latest > copiedThrough }
    }

    private let path: String
    private let threshold: Int32
    private let backstop: Int32
    private let queue = DispatchQueue(label: "formsync.wal-checkpoint", qos: .utility)
    private let state = Mutex(State())
    /// Used only on `queue`.
    private var connection: OpaquePointer?
    private let runs = Atomic<Int>(0)
    private let writerRuns = Atomic<Int>(0)

    /// How many checkpoint passes the second connection ran.
    package var checkpoints: Int { runs.load(ordering: .relaxed) }
    /// How many times the writer checkpointed itself, at four times the threshold.
    package var writerCheckpoints: Int { writerRuns.load(ordering: .relaxed) }

    /// A checkpointer for the database at `path`: a checkpoint once the log holds `threshold`
    /// frames (read as 100–100,000), the writer's own once it holds four times as many.
    package init(path: String, threshold: Int = 1000) {
        self.path = path
        let threshold = Int32(min(max(threshold, 100), 100_000))
        self.threshold = threshold
        backstop = threshold &* 4
    }

    /// Called on the writer's thread after each commit, with the log's frame count.
    func committed(frames: Int32, writer: OpaquePointer) {
        if frames >= backstop {
            writerRuns.add(1, ordering: .relaxed)
            sqlite3_wal_checkpoint_v2(writer, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            return
        }
        let start = state.withLock { state -> Next in
            state.latest = frames
            // A log reused from its start has fewer frames than it had.
            if frames < state.copiedThrough { state.copiedThrough = 0 }
            guard !state.closed, state.leavesFrames(past: threshold) else { return .stop }
            // A pass per quarter threshold of new frames at most: each fsyncs twice.
            if frames - state.copiedThrough >= threshold / 4 {
                if state.scheduled {
                    state.again = true
                    return .stop
                }
                state.scheduled = true
                return .pass
            }
            // Too few for a pass now: copied shortly, unless a pass is under way or due.
            guard !state.scheduled, !state.tailPending else { return .stop }
            state.tailPending = true
            return .tail
        }
        switch start {
        case .pass: queue.async { self.run() }
        case .tail: copyLastFramesLater()
        case .stop: break
        }
    }

    private func copyLastFramesLater() {
        queue.asyncAfter(deadline: .now() + .milliseconds(50)) { self.tail() }
    }

    private enum Next { case pass, tail, stop }

    /// Passes until no commit asked for another meanwhile. The writer reuses the log from its
    /// start only once every frame was copied, so frames committed after the last pass, too
    /// few to ask for one, are copied 50 ms later.
    private func run() {
        while true {
            pass()
            let next = state.withLock { state -> Next in
                if state.closed {
                    state.scheduled = false
                    return .stop
                }
                if state.again {
                    state.again = false
                    return .pass
                }
                state.scheduled = false
                guard state.leavesFrames(past: threshold), !state.tailPending else { return .stop }
                state.tailPending = true
                return .tail
            }
            switch next {
            case .pass: continue
            case .stop: return
            case .tail:
                copyLastFramesLater()
                return
            }
        }
    }

    private func tail() {
        let start = state.withLock { state -> Bool in
            state.tailPending = false
            guard !state.closed, !state.scheduled, state.leavesFrames(past: threshold) else { return false }
            state.scheduled = true
            return true
        }
        if start { run() }
    }

    private func pass() {
        guard !state.withLock({ $0.closed }) else { return }
        if connection == nil {
            var db: OpaquePointer?
            // Never creates: a database removed meanwhile is not brought back empty.
            // A first read opens the file and finds the log (until then the connection does
            // not know the database is in WAL mode, and every checkpoint answers -1).
            if sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let db,
                sqlite3_exec(db, "SELECT COUNT(*) FROM sqlite_master", nil, nil, nil) == SQLITE_OK
            {
                connection = db
            } else {
                if let db { sqlite3_close_v2(db) }
                return
            }
        }
        var logFrames: Int32 = 0
        var copied: Int32 = 0
        guard sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, &logFrames, &copied) == SQLITE_OK else { return }
        runs.add(1, ordering: .relaxed)
        let afterPass = state.withLock { state in
            if copied >= logFrames { state.copiedThrough = logFrames }
            return state.afterPass
        }
        afterPass?()
    }

    /// Runs `body` on the checkpointer's queue after each pass (tests).
    package func afterEachPass(_ body: (@Sendable () -> Void)?) {
        state.withLock { $0.afterPass = body }
    }

    /// Holds the checkpointer back (tests of the writer's own checkpoint); `resume` before
    /// the connection closes.
    package func suspend() { queue.suspend() }
    package func resume() { queue.resume() }
    /// Returns once the passes queued now have run, not those due later (tests).
    package func waitForQueuedPasses() { queue.sync {} }
    /// Returns once no pass is under way or due (tests), or after 10 s.
    package func waitUntilIdle() {
        for _ in 0..<10_000 {
            queue.sync {}
            if state.withLock({ !$0.scheduled && !$0.tailPending }) { return }
            usleep(1000)
        }
    }

    /// Stops checkpointing and closes the second connection; waits for a checkpoint under way.
    func close() {
        state.withLock { $0.closed = true }
        queue.sync {
            if let connection { sqlite3_close_v2(connection) }
            connection = nil
        }
    }
}
