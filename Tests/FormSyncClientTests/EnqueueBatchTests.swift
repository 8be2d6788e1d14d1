import FieldForms
import Foundation
import FormSyncTesting
import Synchronization
import Testing

@testable import FormSyncClient
import FormSyncModel
import FormSyncSQLite

/// Concurrent enqueues share a transaction as well as an fsync: each in a savepoint of its own,
/// so that one that fails is undone alone, and each reading what the ones before it wrote.
struct EnqueueBatchTests {
    /// Runs `tasks` concurrent tasks, each enqueueing `each` of what `make` returns (by task and
    /// index); the ids or errors, and how many transactions committed meanwhile.
    func concurrently(
        _ outbox: Outbox, tasks: Int, each: Int, _ make: @escaping @Sendable (Int, Int) async throws -> Int64
    ) async -> (results: [Result<Int64, any Error>], commits: Int) {
        let commits = Atomic<Int>(0)
        await outbox.observeCommits { _ in commits.add(1, ordering: .relaxed) }
        let results = await withTaskGroup(of: [Result<Int64, any Error>].self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var results: [Result<Int64, any Error>] = []
                    for n in 0..<each {
                        do { results.append(.success(try await make(task, n))) } catch { results.append(.failure(error)) }
                    }
                    return results
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        return (results, commits.load(ordering: .relaxed))
    }

    @Test func concurrentEnqueuesShareTransactionsAndAllOfThemAreStored() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let (results, commits) = await concurrently(outbox, tasks: 4, each: 25) { task, n in
            try await outbox.enqueue(order(Int64(task + 1), quantity: n + 1), documentID: "t\(task)-\(n)")
        }
        let ids = try results.map { try $0.get() }
        #expect(Set(ids).count == 100)
        #expect(commits < 100, "100 enqueues from 4 tasks committed \(commits) transactions: none shared one")
        #expect(await outbox.stateCounts()[.savedOnDevice] == 100)
        let reopened = try h.open()
        #expect(try await reopened.items(in: [.savedOnDevice]).map(\.id).sorted() == ids.sorted())
        _ = await reopened.flush()
        for task in 0..<4 {
            #expect(h.sentDocuments.filter { $0.hasPrefix("t\(task)-") } == (0..<25).map { "t\(task)-\($0)" }, "each task's lane keeps its order")
        }
    }

    @Test func anEnqueueThatFailsInsideABatchIsUndoneAloneAndTheOthersAreSaved() async throws {
        let h = try Harness()
        let outbox = try h.open()
        // Deliveries are refused at their submission's insert, after their photo's file item
        // was written in the same savepoint; orders go through.
        let saboteur = try SQLiteConnection(path: h.path)
        try saboteur.execute("""
            CREATE TRIGGER refuse BEFORE INSERT ON items WHEN NEW.kind = 'submission' AND NEW.form = 'DeliveryConfirmation'
            BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END
            """)
        let photos = try (0..<4).map { try h.cameraFile("p\($0).jpg") }
        let (results, commits) = await concurrently(outbox, tasks: 4, each: 10) { task, n in
            guard n % 5 == 4 else { return try await outbox.enqueue(order(Int64(task + 1)), documentID: "t\(task)-\(n)") }
            let (photo, signature) = (outbox.placeholderIDs.next(), outbox.placeholderIDs.next())
            var delivery = GeneratedFixtures.delivery()
            delivery.proofPhotos = [FileRef(id: photo)]
            delivery.signature = FileRef(id: signature)
            return try await outbox.enqueue(delivery, attachments: [.init(placeholder: photo, source: photos[task]), .init(placeholder: signature, source: photos[task])])
        }
        #expect(commits < 32, "32 saved enqueues from 4 tasks committed \(commits) transactions: none shared one")
        #expect(results.filter { if case .success = $0 { true } else { false } }.count == 32)
        for case .failure(let error) in results {
            guard case OutboxError.storage(let storage) = error else {
                Issue.record("a refused delivery failed with \(error)")
                continue
            }
            #expect(storage.message.contains("disk is full"))
        }
        // The refused deliveries' file items were undone with them: only the orders are counted
        // and stored, and their stash copies are gone.
        #expect(await outbox.stateCounts()[.savedOnDevice] == 32)
        #expect(try FileManager.default.contentsOfDirectory(atPath: h.path + ".stash").isEmpty)
        try saboteur.execute("DROP TRIGGER refuse")
        let reopened = try h.open()
        let stored = try await reopened.items(in: Set(SyncState.allCases))
        #expect(stored.count == 32)
        #expect(stored.allSatisfy { $0.kind == .submission })
    }

    @Test func theSameDocumentEnqueuedFromManyTasksAtOnceIsStoredOnce() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let (results, commits) = await concurrently(outbox, tasks: 8, each: 4) { _, _ in
            try await outbox.enqueue(order(7), documentID: "one-document")
        }
        let ids = try results.map { try $0.get() }
        #expect(commits < 32)
        #expect(Set(ids).count == 1, "every enqueue of the one document returned its one item")
        #expect(try await outbox.items(in: Set(SyncState.allCases)).count == 1)
    }
}
