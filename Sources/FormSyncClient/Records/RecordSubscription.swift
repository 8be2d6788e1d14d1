import FormSyncModel
import FormSyncProtocol
import Foundation

/// A subset of a record type that a device asks for: the records of a type whose spec says
/// `subscribe_by:` reach a device only through the subscriptions it holds (a crew's region,
/// this week's dates), each for a time (`Outbox.subscribe`).
public struct RecordSubscription: Sendable, Equatable {
    /// What a subscription asks of one field; conditions on several fields must all hold.
    public enum Condition: Sendable, Equatable {
        /// The field holds one of these values (a text, a choice's value, a reference's id or
        /// an integer, written as text).
        case oneOf(String, [String])
        /// The date field falls in this window, both ends included (nil: open).
        case between(String, from: LocalDate?, to: LocalDate?)
    }

    /// The app's name for it; subscribing again under the same name replaces it.
    public var name: String
    /// The record type.
    public var type: String
    public var conditions: [Condition]
    /// How long it holds from when it is made or renewed; then it ends and its records leave.
    public var timeToLive: Duration
    /// Feeds of a higher priority are pulled first (the device's own feed is at 0, before
    /// subscriptions of the same priority): today's jobs before the archive.
    public var priority: Int

    public init<R: SyncRecord>(
        _ name: String, of type: R.Type, where conditions: [Condition] = [], for timeToLive: Duration, priority: Int = 0
    ) {
        self.init(name, type: R.recordType, where: conditions, for: timeToLive, priority: priority)
    }

    /// A subscription of a type named as its spec names it (an app without generated types).
    public init(_ name: String, type: String, where conditions: [Condition] = [], for timeToLive: Duration, priority: Int = 0) {
        self.name = name
        self.type = type
        self.conditions = conditions
        self.timeToLive = timeToLive
        self.priority = priority
    }

    /// The subscription as the feed takes it, checked against its type's spec.
    func query(checkedAgainst entry: RecordRegistry.Entry) throws -> SubscriptionQuery {
        guard (1...128).contains(name.utf8.count) else { throw OutboxError.badSubscription("a name is 1 to 128 bytes") }
        guard !entry.subscriptionFields.isEmpty else {
            throw OutboxError.badSubscription("\(entry.name) reaches every device without a subscription (its spec has no subscribe_by)")
        }
        guard timeToLive > .zero else { throw OutboxError.badSubscription("a subscription holds for a time above zero") }
        let fields = Dictionary(entry.subscriptionFields.map { ($0.name, $0.match) }, uniquingKeysWith: { a, _ in a })
        let allowed = entry.subscriptionFields.map(\.name).joined(separator: ", ")
        var query = SubscriptionQuery(type: entry.name)
        for condition in conditions {
            switch condition {
            case .oneOf(let field, let values):
                guard fields[field] == .values else {
                    throw OutboxError.badSubscription(
                        fields[field] == .window
                            ? "\(entry.name).\(field) is a date: subscribe to it with between"
                            : "\(entry.name) is not subscribed by '\(field)' (its spec says subscribe_by: \(allowed))")
                }
                guard (1...SubscriptionQuery.maxValues).contains(values.count),
                    values.allSatisfy({ (1...SubscriptionQuery.maxValueBytes).contains($0.utf8.count) })
                else {
                    throw OutboxError.badSubscription(
                        "\(field) takes 1 to \(SubscriptionQuery.maxValues) values of 1 to \(SubscriptionQuery.maxValueBytes) bytes")
                }
                guard query.values?[field] == nil else { throw OutboxError.badSubscription("\(field) is named twice") }
                query.values = (query.values ?? [:]).merging([field: values]) { a, _ in a }
            case .between(let field, let from, let to):
                guard fields[field] == .window else {
                    throw OutboxError.badSubscription(
                        fields[field] == .values
                            ? "\(entry.name).\(field) is not a date: subscribe to it with oneOf"
                            : "\(entry.name) is not subscribed by '\(field)' (its spec says subscribe_by: \(allowed))")
                }
                guard from != nil || to != nil else { throw OutboxError.badSubscription("the window on \(field) has no end") }
                if let from, let to, to < from { throw OutboxError.badSubscription("the window on \(field) ends before it begins") }
                guard query.windows?[field] == nil else { throw OutboxError.badSubscription("\(field) is named twice") }
                query.windows = (query.windows ?? [:]).merging(
                    [field: SubscriptionQuery.Window(from: from?.description, to: to?.description)]) { a, _ in a }
            }
        }
        return query
    }
}

/// A subscription the device holds, as `Outbox.subscriptions()` lists it.
public struct HeldSubscription: Sendable, Equatable {
    public var name: String
    public var type: String
    public var priority: Int
    /// When it ends, in the outbox clock's milliseconds.
    public var expiresAt: Int64
    /// How many stored records it holds.
    public var records: Int
    /// Whether its feed has been read at least once (its records may still be arriving).
    public var started: Bool
}
