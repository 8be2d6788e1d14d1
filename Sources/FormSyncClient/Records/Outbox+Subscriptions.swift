import FormSyncModel
import FormSyncProtocol

/// Subscriptions: the subsets of the types whose specs say `subscribe_by:` that this person's
/// device holds (docs/Records.md, "Subscriptions").
extension Outbox {
    /// Holds `subscription` for its time to live from now, for the current person: the next
    /// pull brings the records of its type that match it (in their scope: a subscription never
    /// widens what the server lets this person see), then keeps them current, and a record
    /// that stops matching leaves the device. Subscribing again under the same name renews it
    /// (and, when its conditions changed, pulls its records again).
    ///
    /// Throws `OutboxError.badSubscription` for one the app's record specs do not allow.
    public func subscribe(_ subscription: RecordSubscription) async throws {
        try await recordStore.subscribe(subscription, now: environment.now())
    }

    /// Ends a subscription now; the records only it held leave the device, except those an
    /// unsent submission or a draft names. False when there was none by that name.
    @discardableResult
    public func unsubscribe(_ name: String) async throws -> Bool {
        try await recordStore.unsubscribe(name)
    }

    /// The current person's subscriptions, the highest priority first. A subscription whose time
    /// is up ends at the next pull, and its records leave then.
    public func subscriptions() async throws -> [HeldSubscription] {
        try await recordStore.subscriptions()
    }
}
