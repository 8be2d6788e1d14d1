import FormSyncModel
import Foundation

/// How enqueues become durable: one alone commits and fsyncs at once on the outbox's thread;
/// several under way share one transaction (each in a savepoint of its own) and one fsync,
/// which each caller waits for off that thread. The pages they share (the table's last page,
/// the index pages, the lane) then go to the log once per batch instead of once per enqueue.
///
/// Owned by one outbox and used on its thread only (every call passes the outbox's isolation).
final class GroupCommit {
    /// A committed enqueue: its item, and the commit its caller must see durable before it
    /// reports the item saved (0 when it already is).
    struct Saved: Sendable {
        var id: Int64
        var pending: UInt64
    }

    /// One enqueue waiting in a batch for the transaction its leader runs.
    private final class Request {
        let body: (inout [String]) throws -> Int64
        var stashed: [String] = []
        var continuation: CheckedContinuation<Saved, any Error>?

        init(body: @escaping (inout [String]) throws -> Int64) { self.body = body }
    }

    private let lifecycle: ItemLifecycle
    private var database: OutboxDatabase { lifecycle.database }
    /// How many `enqueue` calls are under way (queued on the outbox or running), counted by the
    /// outbox before they queue: an enqueue that finds others waiting shares their fsync.
    private let callers: CallerCount
    private var batch: [Request] = []
    /// The commit number of the latest save: an enqueue that finds its document already
    /// stored waits until this one is durable before it returns.
    private(set) var lastSaveCommit: UInt64 = 0

    init(lifecycle: ItemLifecycle, callers: CallerCount) {
        self.lifecycle = lifecycle
        self.callers = callers
    }

    private var alone: Bool { callers.value.load(ordering: .relaxed) <= 1 }

    /// Runs an enqueue's writes (`ItemLifecycle.capture`, which appends the stash copies it
    /// made) in a durable commit. Alone, it has a transaction of its own and returns once its
    /// fsync (run right here) is done. With other enqueues under way, it joins a batch: the
    /// first of them lets the ones queued behind it on the outbox join, then runs them all in
    /// one transaction, each in a savepoint (one that fails is undone alone and gets its own
    /// error); each caller then waits for the fsync that covers the batch (`Saved.pending`).
    func save(_ body: @escaping (inout [String]) throws -> Int64, isolation: isolated (any Actor)? = #isolation) async throws -> Saved {
        guard !alone else {
            var stashed: [String] = []
            do {
                return Saved(id: try await writeDurably { try body(&stashed) }, pending: 0)
            } catch {
                for path in stashed { lifecycle.stash.remove(path) }
                throw error
            }
        }
        let request = Request(body: body)
        batch.append(request)
        guard batch.count == 1 else {
            // The batch's first enqueue is letting the others join; it runs this one too.
            return try await withCheckedThrowingContinuation { request.continuation = $0 }
        }
        await Task.yield()
        let joined = batch
        batch = []
        let results = await commit(joined)
        for (request, result) in zip(joined, results).dropFirst() { request.continuation?.resume(with: result) }
        return try results[0].get()
    }

    /// Commits at NORMAL and returns once one fsync of the log, shared with every writer that
    /// committed meanwhile, made it durable; the changes are announced only then, so no
    /// snapshot shows "saved" before it is. Alone, the fsync runs on the outbox's own thread
    /// (nobody waits for it); with callers queued behind, it runs elsewhere while they commit,
    /// and they share the next one.
    private func writeDurably<T>(_ body: () throws -> T, isolation: isolated (any Actor)? = #isolation) async throws -> T {
        let (result, announce) = try lifecycle.commit(.normal, body)
        let number = database.commitCount
        lastSaveCommit = max(lastSaveCommit, number)
        try await database.durable(through: number, alone: alone)
        announce()
        return result
    }

    /// Commits a batch of enqueues in one transaction: each one's item and the commit to wait
    /// for, or its error (its own, or the batch's when the batch did not commit; their stash
    /// copies are then removed). The callers wait for the fsync themselves, off the outbox's
    /// thread, unless someone watches snapshots or records: changes are announced only once
    /// durable, so the batch waits for it here.
    private func commit(_ batch: [Request], isolation: isolated (any Actor)? = #isolation) async -> [Result<Saved, any Error>] {
        var results: [Result<Int64, any Error>] = []
        do {
            let (_, announce) = try lifecycle.commit(.normal) {
                for request in batch {
                    let marks = (changes: lifecycle.changes.count, notices: lifecycle.withRecords { $0.notices })
                    let result = try database.savepoint { try request.body(&request.stashed) }
                    if case .failure = result {
                        lifecycle.changes.removeSubrange(marks.changes...)
                        lifecycle.withRecords { $0.notices = marks.notices }
                    }
                    results.append(result)
                }
            }
            var pending = database.commitCount
            lastSaveCommit = max(lastSaveCommit, pending)
            if lifecycle.observers.hasSnapshotListeners || lifecycle.withRecords({ !$0.listeners.isEmpty }) {
                try await database.durable(through: pending, alone: false)
                announce()
                pending = 0
            }
            return results.map { $0.map { Saved(id: $0, pending: pending) } }
        } catch {
            for request in batch { for path in request.stashed { lifecycle.stash.remove(path) } }
            return batch.indices.map { index in
                if index < results.count, case .failure(let own) = results[index] { return .failure(own) }
                return .failure(error)
            }
        }
    }
}
