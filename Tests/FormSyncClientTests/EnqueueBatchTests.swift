import FieldForms
import FormSyncModel
import FormSyncSQLite
import FormSyncTesting
import Foundation
import Synchronization
import Testing

@testable import FormSyncClient

/// Concurrent enqueues share a transaction as well as an fsync: each in a savepoint of its own,
/// so that one that fails is undone alone, and each reading what the ones before it wrote.
@Suite(.serialized) struct EnqueueBatchTests {
    /// Runs `tasks` concurrent tasks, each enqueueing `each` of what `make` returns (by task and
    /// index), into a new outbox; the ids or errors, and how many transactions committed.
    ///
    /// The actor is first held by a delivery whose photo's transform waits until every task's
    /// first enqueue is under way, so that they gather in a batch however loaded the machine is
    /// (unheld, under the full suite, the tasks could run one after another). The delivery is
    /// the first result. The hold blocks one thread of the concurrency pool, so the suite runs
    /// its tests one at a time: two holds at once would take both threads of a two-core machine,
    /// and nothing would be left to release them.
    func concurrently(
        _ h: Harness, tasks: Int, each: Int, _ make: @escaping @Sendable (Outbox, Int, Int) async throws -> ItemID,
        before: (String) throws -> Void = { _ in }
    ) async throws -> (outbox: Outbox, results: [Result<ItemID, any Error>], commits: Int) {
        let holding = Atomic<Bool>(false)
        let release = DispatchSemaphore(value: 0)
        let first = Atomic<Bool>(true)
        h.configuration.attachmentTransform = { source, type, _ in
            if first.exchange(false, ordering: .relaxed) {
                holding.store(true, ordering: .releasing)
                release.wait()
            }
            return (source, type)
        }
        let outbox = try h.open()
        try before(h.path)
        let commits = Atomic<Int>(0)
        await outbox.observeCommits { _ in commits.add(1, ordering: .relaxed) }
        let (photo, signature) = (outbox.placeholderIDs.next(), outbox.placeholderIDs.next())
        var delivery = GeneratedFixtures.delivery()
        delivery.proofPhotos = [FileRef(id: photo)]
        delivery.signature = FileRef(id: signature)
        let (file, ink) = (try h.cameraFile("held.jpg"), try h.cameraFile("held.png"))
        let held = Task { [delivery] in
            try await outbox.enqueue(
                delivery, attachments: [.init(placeholder: photo, source: file), .init(placeholder: signature, source: ink)])
        }
        await eventually("the delivery holds the actor") { holding.load(ordering: .acquiring) }
        let work = Task {
            await withTaskGroup(of: [Result<ItemID, any Error>].self) { group in
                for task in 0..<tasks {
                    group.addTask {
                        var results: [Result<ItemID, any Error>] = []
                        for n in 0..<each {
                            do { results.append(.success(try await make(outbox, task, n))) } catch { results.append(.failure(error)) }
                        }
                        return results
                    }
                }
                return await group.reduce(into: []) { $0 += $1 }
            }
        }
        // Every task has entered enqueue (and is counted, so the batch sees company) before the
        // held one lets go: the order the test needs, waited for rather than slept for.
        await eventually("every task enqueues") { outbox.enqueueCallers.value.load(ordering: .relaxed) >= tasks + 1 }
        release.signal()
        let heldResult: Result<ItemID, any Error> = await held.result
        return (outbox, [heldResult] + (await work.value), commits.load(ordering: .relaxed))
    }

    @Test func concurrentEnqueuesShareTransactionsAndAllOfThemAreStored() async throws {
        let h = try Harness()
        let (outbox, results, commits) = try await concurrently(h, tasks: 4, each: 25) { outbox, task, n in
            try await outbox.enqueue(order(Int64(task + 1), quantity: n + 1), documentID: "t\(task)-\(n)")
        }
        let ids = try results.map { try $0.get() }
        #expect(Set(ids).count == 101)
        #expect(commits < 101, "101 enqueues committed \(commits) transactions: none shared one")
        #expect(await outbox.stateCounts()[.savedOnDevice] == 103, "the orders, the delivery and its two files")
        let reopened = try h.open()
        #expect(try await reopened.items(in: [.savedOnDevice]).filter { $0.kind == .submission }.map(\.id).sorted() == ids.sorted())
        _ = await reopened.flush()
        for task in 0..<4 {
            #expect(
                h.sentDocuments.filter { $0.hasPrefix("t\(task)-") } == (0..<25).map { "t\(task)-\($0)" },
                "each task's lane keeps its order")
        }
    }

    @Test func anEnqueueThatFailsInsideABatchIsUndoneAloneAndTheOthersAreSaved() async throws {
        let h = try Harness()
        // These deliveries are refused at their submission's insert, after their photo's and
        // signature's file items were written in the same savepoint; orders go through.
        let photos = try (0..<4).map { try h.cameraFile("p\($0).jpg") }
        let signatures = try (0..<4).map { try h.cameraFile("s\($0).png") }
        let (outbox, results, commits) = try await concurrently(h, tasks: 4, each: 10) { outbox, task, n in
            guard n % 5 == 4 else { return try await outbox.enqueue(order(Int64(task + 1)), documentID: "t\(task)-\(n)") }
            let (photo, signature) = (outbox.placeholderIDs.next(), outbox.placeholderIDs.next())
            var delivery = GeneratedFixtures.delivery()
            delivery.proofPhotos = [FileRef(id: photo)]
            delivery.signature = FileRef(id: signature)
            return try await outbox.enqueue(
                delivery,
                attachments: [.init(placeholder: photo, source: photos[task]), .init(placeholder: signature, source: signatures[task])],
                documentID: "refused-\(task)-\(n)")
        } before: { path in
            try SQLiteConnection(path: path).execute(
                """
                CREATE TRIGGER refuse BEFORE INSERT ON items WHEN NEW.kind = 'submission' AND NEW.document_id LIKE 'refused-%'
                BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END
                """)
        }
        let saved = results.filter { if case .success = $0 { true } else { false } }.count
        #expect(saved == 33, "the 32 orders and the delivery that held the actor")
        #expect(commits < 33, "33 saved enqueues committed \(commits) transactions: none shared one")
        for case .failure(let error) in results {
            guard case OutboxError.storage(let storage) = error else {
                Issue.record("a refused delivery failed with \(error)")
                continue
            }
            #expect(storage.message.contains("disk is full"))
        }
        // The refused deliveries' file items were undone with them: what is counted and stored
        // is the orders and the first delivery with its two files, and only its copies are stashed.
        #expect(await outbox.stateCounts()[.savedOnDevice] == 35)
        #expect(try FileManager.default.contentsOfDirectory(atPath: h.path + ".stash").count == 2)
        try SQLiteConnection(path: h.path).execute("DROP TRIGGER refuse")
        let stored = try await h.open().items(in: Set(SyncState.allCases))
        #expect(stored.count == 35)
        #expect(stored.filter { $0.kind == .file }.count == 2)
    }

    @Test func theSameDocumentEnqueuedFromManyTasksAtOnceIsStoredOnce() async throws {
        let h = try Harness()
        let (outbox, results, commits) = try await concurrently(h, tasks: 8, each: 4) { outbox, _, _ in
            try await outbox.enqueue(order(7), documentID: "one-document")
        }
        let ids = try results.dropFirst().map { try $0.get() }
        #expect(commits < 33)
        #expect(Set(ids).count == 1, "every enqueue of the one document returned its one item")
        #expect(try await outbox.items(in: Set(SyncState.allCases)).filter { $0.form == "SalesOrder" }.count == 1)
    }
}
