import FormSyncModel
import Foundation

extension Outbox {
    // MARK: Parked items

    /// Items a person has to act on in the current workspace: rejected, conflict, exhausted, blocked.
    public func parkedItems() throws -> [OutboxItem] {
        try items(in: [.rejected, .conflict, .exhausted, .blocked])
    }

    /// Items of the current workspace in the given states, in enqueue order: on a shared phone,
    /// the current person's alone.
    public func items(in states: Set<SyncState>) throws -> [OutboxItem] {
        let principal = lifecycle.principal
        let rows = try storage {
            try store.items(workspace: workspace, states: ItemLifecycle.storedStates(showing: states), principal: .some(principal))
        }
        return rows.map(lifecycle.publicItem).filter { states.contains($0.state) }
    }

    /// One item of the current workspace by id; nil when there is none, `otherWorkspace` when
    /// it belongs to another workspace.
    public func item(_ id: ItemID) throws -> OutboxItem? {
        do {
            return lifecycle.publicItem(try storage { try lifecycle.existing(id) })
        } catch OutboxError.noSuchItem {
            return nil
        }
    }

    /// The placeholders of the records item `id`'s lists create (`creates:` on a list), by
    /// list, in item order: each record shows on the device under its placeholder at once, and
    /// another form may name it before anything reached the server. Empty for a form whose lists
    /// create nothing, or an item of another workspace.
    public func itemRecordPlaceholders(of id: ItemID) throws -> [String: [Int64]] {
        let rows = try storage { () throws -> [OutboxStore.ItemRecord] in
            guard let row = try store.item(id.rawValue), row.workspace == workspace else { return [] }
            return try store.itemRecords(of: row.id)
        }
        return Dictionary(grouping: rows, by: \.list).mapValues { $0.sorted { $0.position < $1.position }.map(\.placeholder) }
    }

    /// Sends a parked item again as it is (same attempt identity), with a fresh attempt budget.
    public func retry(_ id: ItemID) throws {
        try apply(.retry, to: id)
    }

    /// Replaces a parked submission's payload with a fixed one: same document identity, new
    /// attempt identity. The fixed payload is validated first.
    public func resubmit<P: FormPayload>(_ id: ItemID, with fixed: P) throws {
        try apply(.resubmit(ItemLifecycle.PreparedFix(fixed)), to: id)
    }

    /// Settles a conflict with the payload a person chose: it is sent as an edit of the server's
    /// current record (its version becomes the base), under a new attempt identity.
    public func resolveConflict<P: FormPayload>(_ id: ItemID, with merged: P) throws {
        try apply(.resolveConflict(ItemLifecycle.PreparedFix(merged)), to: id)
    }

    private func apply(_ fix: ItemLifecycle.Fix, to id: ItemID) throws {
        let now = environment.now()
        try write(.full) { try lifecycle.apply(fix, to: id, now: now) }
    }

    /// Removes a parked or blocked item for good. Anything that depends on it stays blocked
    /// until it is discarded too. Pending and in-flight items cannot be discarded.
    public func discard(_ id: ItemID) throws {
        let now = environment.now()
        let path = try write(.full) { try lifecycle.discard(id, now: now) }
        if let path { stash.remove(path) }
    }

    /// Forgets confirmed items of the current workspace acknowledged before `cutoff` (by the
    /// outbox's clock): the server holds them, so only their local record goes, and the database stops
    /// growing. Server ids of landed placeholders stay recorded, so later submissions that
    /// reference them still resolve. Returns how many items were removed.
    @discardableResult
    public func purgeConfirmed(acknowledgedBefore cutoff: Date) throws -> Int {
        let workspace = self.workspace
        let cutoff = cutoff.millisecondsSince1970
        let removed = try write(.normal) { try store.deleteConfirmed(workspace: workspace, before: cutoff) }
        try lifecycle.reloadCounts()
        emitSnapshot(changed: nil)
        return removed
    }
}
