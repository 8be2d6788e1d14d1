import FormSyncSQLite
import Foundation

/// An outbox file and its one owner in this process (`Database`): the store's tables over the
/// writer connection, the thread every write runs on, the group commit of the log, and reader
/// connections. The outbox and the record store are both clients of it.
///
/// This is where the storage engine ends: every SQLite error leaves here as `OutboxError`
/// (`storage`, `notDurable`), and no other part of the client names a SQLite type.
package final class OutboxDatabase: @unchecked Sendable {
    /// How durable one transaction is on its own: `full` fsyncs in the commit; `normal`
    /// leaves the fsync to the group commit (`durable(through:alone:)`).
    package enum Durability: Sendable {
        case full, normal

        var sqlite: FormSyncSQLite.Durability { self == .full ? .full : .normal }
    }

    /// The tables, over the writer connection.
    private let writer: OutboxStore
    private let owner: Database

    /// The tables, lent to a caller on the database's thread (the outbox's and the record
    /// store's executor) and to no other: a call from anywhere else stops the process, since a
    /// connection used by two threads, or blocking I/O on the cooperative pool, would be a bug.
    var store: OutboxStore {
        precondition(owner.executor.isCurrent, "the outbox's tables are used on its database's thread only")
        return writer
    }

    /// The tables while the outbox is being opened, before it runs on its thread (its
    /// migrations, the leases reclaimed, the counts read).
    var storeWhileOpening: OutboxStore { writer }

    /// Opens (or creates) the outbox file at `path` (see `OutboxStore.init`). `syncLog`
    /// replaces the log's `fdatasync` in tests.
    init(path: String, now: Int64, openFlags: Int32, syncLog: @escaping @Sendable (Int32) -> Int32) throws {
        writer = try OutboxStore(path: path, now: now, openFlags: openFlags)
        owner = Database(writer: writer.db, name: "formsync.outbox", sync: syncLog)
    }

    /// The log's fsync on this platform (`fdatasync`; `F_FULLFSYNC` on Apple platforms).
    static let defaultLogSync: @Sendable (Int32) -> Int32 = WALSync.dataSync

    /// The executor of the thread that owns the writer: the outbox and the record store run on it.
    var unownedExecutor: UnownedSerialExecutor { owner.executor.asUnownedSerialExecutor() }

    /// The same thread as a task executor: work a flush starts for its answers (the
    /// transport's call) runs there too, so an answer does not wake two threads.
    var taskExecutor: any TaskExecutor { owner.executor }

    /// Group commit of the log (tests and benchmarks count its fsyncs).
    var walSync: WALSync { owner.walSync }
    /// The executor's object (its thread holds it until the thread ends: tests watch it go).
    var executorObject: AnyObject { owner.executor }
    /// The log's checkpointer (tests and benchmarks watch it).
    var checkpointer: WALCheckpointer? { owner.checkpointer }

    /// Runs `body` in one transaction of the writer.
    func transaction<T>(_ durability: Durability, _ body: () throws -> T) throws -> T {
        try Self.mapping { try writer.db.transaction(durability.sqlite, body) }
    }

    /// Runs `body` in a savepoint of the running transaction: on failure its writes are undone
    /// and the transaction goes on.
    func savepoint<T>(_ body: () throws -> T) throws -> Result<T, any Error> {
        try Self.mapping { try writer.db.savepoint(body).mapError(Self.mapped) }
    }

    /// The number of the writer's latest commit (what `durable(through:alone:)` is given).
    var commitCount: UInt64 { writer.db.commitCount }

    /// Returns once commit `number` is on disk; see `Database.durable(through:alone:)`.
    func durable(through number: UInt64, alone: Bool, isolation: isolated (any Actor)? = #isolation) async throws {
        do {
            try await owner.durable(through: number, alone: alone, isolation: isolation)
        } catch {
            throw OutboxError.notDurable(reason: "\(error)")
        }
    }

    /// Makes everything in the log durable (at open: what a killed process did not fsync).
    func syncLog() throws {
        do {
            try owner.walSync.syncLog()
        } catch {
            throw OutboxError.notDurable(reason: "\(error)")
        }
    }

    /// Runs `body` over a reader connection, off the writer's thread (see `Database.read`).
    func read<T: Sendable>(_ body: @escaping @Sendable (OutboxStore) throws -> T) async throws -> T {
        do {
            return try await owner.read { connection in try body(OutboxStore(reading: connection)) }
        } catch {
            throw Self.mapped(error)
        }
    }

    /// Tells `observer` the durability of each commit, in order, inside the commit.
    func observeCommits(_ observer: @escaping @Sendable (Durability) -> Void) {
        writer.db.commitObserver = { observer($0 == .full ? .full : .normal) }
    }

    /// Runs `body`, turning a SQLite error into `OutboxError.storage`.
    static func mapping<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw mapped(error)
        }
    }

    /// `error` as callers see it: a SQLite error becomes `OutboxError.storage`.
    static func mapped(_ error: any Error) -> any Error {
        guard let error = error as? SQLiteError else { return error }
        return OutboxError.storage(StorageFailure(code: error.code, message: error.message, sql: error.sql))
    }
}

extension Outbox {
    /// Group commit of the log (tests and benchmarks count its fsyncs).
    package nonisolated var walSync: WALSync { database.walSync }
    /// Copies the log back into the database off the outbox's thread (tests and benchmarks
    /// watch it).
    package nonisolated var checkpointer: WALCheckpointer? { database.checkpointer }
    /// The outbox's thread's executor, which lives as long as the thread (tests watch it end).
    package nonisolated var executorObject: AnyObject { database.executorObject }

    /// Tells `observer` the durability of each commit, in order (for tests of what a power loss
    /// could undo).
    package func observeCommits(_ observer: @escaping @Sendable (OutboxDatabase.Durability) -> Void) {
        database.observeCommits(observer)
    }
}
