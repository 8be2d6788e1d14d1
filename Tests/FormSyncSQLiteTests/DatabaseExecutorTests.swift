import Foundation
import Testing

@testable import FormSyncSQLite

/// The database's executor knows its own thread: what lets the outbox lend its tables to code
/// on that thread only (`OutboxDatabase.store`).
struct DatabaseExecutorTests {
    actor OnTheDatabaseThread {
        let executor: DatabaseExecutor
        init(_ executor: DatabaseExecutor) { self.executor = executor }
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        func isCurrent() -> Bool { executor.isCurrent }
        /// Whether `another` executor says its thread is this one.
        func isCurrent(_ another: DatabaseExecutor) -> Bool { another.isCurrent }
    }

    @Test func onlyTheExecutorsOwnThreadIsCurrent() async {
        let executor = DatabaseExecutor(name: "test.database")
        defer { executor.shutdown() }
        #expect(!executor.isCurrent, "the test's thread is not the database's")
        #expect(await OnTheDatabaseThread(executor).isCurrent(), "a job on the executor is")
        let other = DatabaseExecutor(name: "test.other")
        defer { other.shutdown() }
        #expect(await OnTheDatabaseThread(other).isCurrent(), "each executor has a thread of its own")
        #expect(await !OnTheDatabaseThread(other).isCurrent(executor), "another database's thread is not this one's")
    }
}
