import Foundation
import FormSyncModel

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
        _ = try existing(id)
        return try storage { try store.attempts(of: id.rawValue) }
    }

    // MARK: State and snapshots

    /// Counts per state for the current workspace.
    public func stateCounts() -> [SyncState: Int] {
        let stored = counts[workspace] ?? [:]
        let sent = inFlight.count
        return [
            networkDown ? .waitingForNetwork : .savedOnDevice: stored[.pending] ?? 0,
            .sending: max(0, (stored[.leased] ?? 0) - sent),
            .sent: sent,
            .confirmed: stored[.confirmed] ?? 0,
            .rejected: stored[.rejected] ?? 0,
            .conflict: stored[.conflict] ?? 0,
            .exhausted: stored[.exhausted] ?? 0,
            .blocked: stored[.blocked] ?? 0,
        ].filter { $0.value > 0 }
    }

    /// Snapshots of the current workspace, one per change, starting with the present. A slow
    /// consumer only ever misses intermediate snapshots (the newest is kept): it never blocks
    /// or fails the outbox.
    public func snapshots() -> AsyncStream<OutboxSnapshot> {
        observers.snapshotStream(starting: OutboxSnapshot(workspace: workspace, counts: stateCounts(), changed: nil))
    }

    func emit(_ change: OutboxItemChange) {
        emitSnapshot(changed: change)
    }

    func emitSnapshot(changed: OutboxItemChange?) {
        guard observers.hasSnapshotListeners else { return }
        observers.publish(OutboxSnapshot(workspace: workspace, counts: stateCounts(), changed: changed))
    }

    func publicState(_ row: OutboxStore.Row) -> SyncState {
        publicState(id: row.id, row.state)
    }

    func publicState(id: Int64, _ state: State) -> SyncState {
        switch state {
        case .pending: return networkDown ? .waitingForNetwork : .savedOnDevice
        case .leased: return inFlight.contains(id) ? .sent : .sending
        case .confirmed: return .confirmed
        case .rejected: return .rejected
        case .conflict: return .conflict
        case .exhausted: return .exhausted
        case .blocked: return .blocked
        }
    }

    func publicItem(_ row: OutboxStore.Row) -> OutboxItem {
        OutboxItem(row, state: publicState(row))
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
