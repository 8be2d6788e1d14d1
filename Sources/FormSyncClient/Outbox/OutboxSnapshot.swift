import FormSyncModel

/// The outbox at one moment: counts per state for the current workspace, and the item whose
/// change produced this snapshot (nil for the first one).
public struct OutboxSnapshot: Sendable, Equatable {
    public var workspace: String
    /// Items per state; states with no items are left out.
    public var counts: [SyncState: Int]
    public var changed: OutboxItemChange?

    /// Items a person has to act on.
    public var needsAttention: Int {
        counts.filter { $0.key.needsAttention }.reduce(0) { $0 + $1.value }
    }

    /// Items still on their way.
    public var pending: Int {
        (counts[.savedOnDevice] ?? 0) + (counts[.sending] ?? 0) + (counts[.sent] ?? 0)
    }
}

/// One item's move to a new state.
public struct OutboxItemChange: Sendable, Equatable {
    public var id: ItemID
    public var state: SyncState
}
