import FormSyncModel
import FormSyncProtocol
import Foundation

/// Subscriptions: which subsets of the types that come only by subscription this person's
/// device holds, and the eviction of what none of them holds any more.
extension RecordStore {
    /// Ends the subscriptions of `view` whose time is up (their records are evicted by the next
    /// `evictUnheldRecords`); runs in the caller's transaction.
    func endExpiredSubscriptions(view: String, now: Int64) throws {
        for row in try store.subscriptions(view: view) where row.expiresAt <= now {
            try store.removeSubscription(view: view, name: row.name)
        }
    }

    /// Removes the records of subscribed types that no subscription holds, except those an
    /// unsent submission or a draft of this person names (an edit, a delete): the person's work
    /// still shows on the record it changes, and is sent against it.
    func evictUnheldRecords(view: String) throws {
        let (workspace, principal, registry) = (self.workspace, self.principal, self.registry)
        try writeAnnouncing {
            let drafts = try store.drafts(view: view)
            for type in recordTypes.subscribedTypes {
                let unheld = try store.unheldRecords(view: view, type: type)
                guard !unheld.isEmpty else { continue }
                var named = Set(try Self.overlay(store, registry: registry, type: type, workspace: workspace, principal: principal).keys)
                for draft in drafts {
                    guard let action = registry[draft.form]?.recordAction, action.recordType == type, action.kind != .creates,
                        let id = RecordProjection.editedID(form: draft.payload, action: action)
                    else { continue }
                    named.insert(id)
                }
                for id in unheld where !named.contains(id) {
                    if try store.deleteRecord(view: view, type: type, id: id) { noteRecord(type, id) }
                }
            }
        }
    }

    /// Adds or renews a subscription of the current person (see `Outbox.subscribe`).
    func subscribe(_ subscription: RecordSubscription, now: Int64) throws {
        guard let entry = recordTypes[subscription.type] else {
            throw OutboxError.badSubscription("\(subscription.type) is not a record type this app knows")
        }
        let query = try subscription.query(checkedAgainst: entry)
        let seconds = subscription.timeToLive.components.seconds
        let ttl = seconds > Int64.max / 2000 ? Int64.max / 2 : max(0, seconds * 1000)
        let row = OutboxStore.SubscriptionRow(
            name: subscription.name, type: entry.name, query: query.json, priority: subscription.priority,
            expiresAt: now.addingReportingOverflow(ttl).overflow ? Int64.max : now + ttl, cursor: nil)
        let view = self.view
        try database.transaction(.full) { try store.saveSubscription(row, view: view) }
    }

    /// Ends a subscription of the current person and evicts the records only it held.
    func unsubscribe(_ name: String) throws -> Bool {
        let view = self.view
        let removed = try database.transaction(.full) { try store.removeSubscription(view: view, name: name) }
        try evictUnheldRecords(view: view)
        return removed
    }

    /// The current person's subscriptions, the highest priority first.
    func subscriptions() throws -> [HeldSubscription] {
        let view = self.view
        return try OutboxDatabase.mapping {
            let counts = try store.subscriptionRecordCounts(view: view)
            return try store.subscriptions(view: view).map { row in
                HeldSubscription(
                    name: row.name, type: row.type, priority: row.priority, expiresAt: row.expiresAt, records: counts[row.name] ?? 0,
                    started: row.cursor != nil)
            }
        }
    }
}
