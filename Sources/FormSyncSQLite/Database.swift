import Foundation

/// The one owner of a database file in this process: its writer connection, the serial
/// executor every write runs on, the group commit of its log, its checkpointer, and a few
/// reader connections for queries that do not need the writer.
///
/// The writer and the fsync run on `executor`, a thread of the owner's own, never on Swift's
/// cooperative pool. Actors that write (the outbox, the record store) take `executor` as
/// theirs, so a write never hops threads. Reads (`read`) run on their own connections on
/// their own threads: WAL lets them see every committed transaction while the writer writes,
/// so a long query never waits behind a write, and a write never waits behind a query.
package final class Database: @unchecked Sendable {
    /// The connection that writes; used only on `executor`.
    package let writer: SQLiteConnection
    /// The thread the writer runs on.
    package let executor: DatabaseExecutor
    /// Group commit of the log (`WALSync`).
    package let walSync: WALSync
    private let readers: ReaderPool

    /// Takes ownership of `writer` (already opened and migrated); `sync` replaces the log's
    /// `fdatasync` in tests; `readerCount` connections (opened when first needed) serve `read`.
    package init(
        writer: SQLiteConnection, name: String, readerCount: Int = 2, sync: @escaping @Sendable (Int32) -> Int32 = WALSync.dataSync
    ) {
        self.writer = writer
        executor = DatabaseExecutor(name: name)
        walSync = WALSync(databasePath: writer.path, sync: sync)
        readers = ReaderPool(path: writer.path, count: max(1, readerCount), name: name + ".read")
    }

    deinit {
        executor.shutdown()
    }

    /// Copies the log back into the database off the writer.
    package var checkpointer: WALCheckpointer? { writer.checkpointer }

    /// Returns once commit `number` of the writer is on disk. Called on `executor` after a
    /// commit: when the caller is `alone` and no job waits for the thread, the fsync runs right
    /// here (nobody waits for it, and a hop to another thread would cost two wake-ups);
    /// otherwise it runs on the syncer's thread while the executor serves the jobs waiting,
    /// whose commits then share the next fsync.
    /// It runs on the caller's executor (`isolation`): an `async` method of a plain class
    /// would otherwise run on the cooperative pool, and block one of its threads in the fsync.
    package func durable(through number: UInt64, alone: Bool, isolation: isolated (any Actor)? = #isolation) async throws {
        if alone && executor.waitingJobs == 0 {
            try walSync.waitDurable(through: number)
        } else {
            try await walSync.durable(through: number)
        }
    }

    /// Runs `body` on a reader connection, on a thread of the readers' own: it sees every
    /// transaction the writer committed before the call, and never blocks the writer.
    package func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await readers.read(body)
    }
}

/// Read-only connections to one database, each used by one reader at a time on a queue of
/// the pool's own.
final class ReaderPool: @unchecked Sendable {
    private let path: String
    private let queue: DispatchQueue
    private let slots: DispatchSemaphore
    private let lock = NSLock()
    private var idle: [SQLiteConnection] = []

    init(path: String, count: Int, name: String) {
        self.path = path
        queue = DispatchQueue(label: name, qos: .userInitiated, attributes: .concurrent)
        slots = DispatchSemaphore(value: count)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { [self] in
                slots.wait()
                defer { slots.signal() }
                let result = Result { () throws -> T in
                    let connection = try take()
                    defer { give(connection) }
                    return try body(connection)
                }
                continuation.resume(with: result)
            }
        }
    }

    private func take() throws -> SQLiteConnection {
        lock.lock()
        let connection = idle.popLast()
        lock.unlock()
        return try connection ?? SQLiteConnection(readingOnly: path)
    }

    private func give(_ connection: SQLiteConnection) {
        lock.lock()
        idle.append(connection)
        lock.unlock()
    }
}
