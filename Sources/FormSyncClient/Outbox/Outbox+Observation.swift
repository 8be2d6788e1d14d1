import FormSyncModel
import Foundation

extension Outbox {
    // MARK: Events and history

    /// Every attempt, backoff, parked item, upload's progress, pull, and the network going and
    /// coming back, as it happens (see `SyncEvent`). Listening costs nothing when nobody does;
    /// a slow listener misses old events, never slows the outbox.
    public nonisolated func events() -> AsyncStream<SyncEvent> {
        observers.eventStream()
    }

    /// What became of an item's attempts, oldest first (the newest 20 are kept).
    public func history(of id: ItemID) throws -> [AttemptRecord] {
        _ = try lifecycle.existing(id)
        return try storage { try store.attempts(of: id.rawValue) }
    }

    // MARK: State and snapshots

    /// Counts per state for the current workspace.
    public func stateCounts() -> [SyncState: Int] {
        lifecycle.stateCounts()
    }

    /// Snapshots of the current workspace, one per change, starting with the present. A slow
    /// consumer only ever misses intermediate snapshots (the newest is kept): it never blocks
    /// or fails the outbox.
    public func snapshots() -> AsyncStream<OutboxSnapshot> {
        observers.snapshotStream(starting: lifecycle.snapshot(changed: nil))
    }

    func emitSnapshot(changed: OutboxItemChange?) {
        lifecycle.emitSnapshot(changed: changed)
    }

    /// A signal each time work may have become due without a flush noticing: an enqueue, a
    /// retry, a fix, a workspace switch. The sync engine wakes on it.
    public nonisolated func workSignals() -> AsyncStream<Void> {
        observers.workStream()
    }

    func signalWork() {
        observers.signalWork()
    }
}
