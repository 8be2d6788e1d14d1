import FormSyncSQLite
import Foundation
import Synchronization

/// The writes `SQLiteServerStore` makes between two fsyncs of its log, committed as one
/// transaction just before the fsync round that makes them durable (a group commit), with the
/// numbers that tell a reply which fsync it waits for and whether its batch was lost. Used only
/// under the store's lock, except the atomics that handlers read outside it.
final class WriteBatches: @unchecked Sendable {
    private let db: SQLiteConnection

    init(db: SQLiteConnection) {
        self.db = db
    }

    /// Commits at `synchronous=NORMAL`: the server answers a request only after `walSync` made
    /// every commit before the answer durable (one fsync shared by the requests committing
    /// together: a group commit). A batch of writes still open is committed first.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        commit()
        return try db.transaction(groupCommit ? .normal : .full, body)
    }

    /// Runs a request's write in the open batch, in a savepoint of its own: the writes made
    /// between two fsyncs of the log share one transaction, which the next fsync round commits
    /// (`commitBatch`) just before it runs. Each commit rewrote the same last pages of the
    /// ledger's and the documents' tables and indexes; one commit per round writes them once,
    /// and the fsync that bounds the server has fewer pages to write. A write that fails rolls
    /// back its savepoint alone; one after which SQLite rolled back the whole transaction
    /// loses the batch, and every reply that depended on it becomes a 500. With the group
    /// commit off, a plain transaction.
    func batched<T>(_ body: () throws -> T) throws -> T {
        guard groupCommit else { return try transaction(body) }
        if !batchOpen {
            try db.setDurability(.normal)
            try db.run("BEGIN IMMEDIATE")
            openBatch.store(committedNumber + 1, ordering: .sequentiallyConsistent)
        }
        try db.run("SAVEPOINT request")
        do {
            let result = try body()
            try db.run("RELEASE request")
            return result
        } catch {
            if db.inTransaction {
                _ = try? db.run("ROLLBACK TO request")
                _ = try? db.run("RELEASE request")
            } else {
                lose(error)
            }
            throw error
        }
    }

    /// Commits the open batch, if any (an fsync round calls it first). Its number is taken
    /// either way: committed, or lost with its reason.
    func commit() {
        guard batchOpen else { return }
        do {
            try db.run("COMMIT")
            openBatch.store(0, ordering: .sequentiallyConsistent)
        } catch {
            if db.inTransaction { _ = try? db.run("ROLLBACK") }
            lose(error)
        }
    }

    private func lose(_ error: any Error) {
        let number = openBatch.load(ordering: .sequentiallyConsistent)
        lostBatches.add(1, ordering: .sequentiallyConsistent)
        lost.withLock { lost in
            lost.append((number, "\(error)"))
            if lost.count > 64 { lost.removeFirst(lost.count - 64) }
        }
        openBatch.store(0, ordering: .sequentiallyConsistent)
        FileHandle.standardError.write(Data("formsync server: a batch of writes was lost: \(error)\n".utf8))
    }

    /// The number of the last commit: the connection's commits, with each lost batch counted
    /// as one, so that numbers are never given twice. What `walSync` is asked to make durable.
    var committedNumber: UInt64 { db.commitCount + lostBatches.load(ordering: .sequentiallyConsistent) }

    /// What a reply must wait for: the open batch's number, or the last commit's. Safe to read
    /// outside the server's lock; a thread that wrote reads at least its write's number.
    var durabilityGate: UInt64 {
        let open = openBatch.load(ordering: .sequentiallyConsistent)
        return max(open, committedNumber)
    }

    /// Why a batch numbered from `numbers` was lost, if one was.
    func lostBatch(in numbers: ClosedRange<UInt64>) -> String? {
        lost.withLock { lost in lost.last { numbers.contains($0.number) }?.reason }
    }

    /// The open batch's number; 0 when none is open.
    private let openBatch = Atomic<UInt64>(0)
    private var batchOpen: Bool { openBatch.load(ordering: .sequentiallyConsistent) != 0 }
    private let lostBatches = Atomic<UInt64>(0)
    private let lost = Mutex<[(number: UInt64, reason: String)]>([])

    /// Off: every write commits FULL on its own (the baseline of `formsync-lab bench server`).
    /// Read by handlers outside the store's lock, to know whether to wait for an fsync.
    var groupCommit: Bool {
        get { groupCommitFlag.load(ordering: .relaxed) }
        set { groupCommitFlag.store(newValue, ordering: .relaxed) }
    }
    private let groupCommitFlag = Atomic<Bool>(true)
}
