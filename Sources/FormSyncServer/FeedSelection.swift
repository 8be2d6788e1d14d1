import FormSyncModel
import FormSyncProtocol
import Foundation

/// Which changes a page of the feed holds, besides the caller's scope: every type (the back
/// office), every type but those devices get only by subscription (a device's own feed), or one
/// subscription's (docs/PROTOCOL.md, "Subscriptions").
package enum FeedSelection: Sendable, Equatable {
    case all
    /// Every type but these.
    case excluding([String])
    /// These types only.
    case only([String])
    /// One subscription's records. With `outsideToo` (a cursor past the start: the device may
    /// hold records that left the subscription since) the changes of its type's records that
    /// do not match come too, marked outside; from the start only matching records come.
    case subscription(SubscriptionMatch, outsideToo: Bool)

    /// The selection's SQL: a condition on the `changes c` row joined with its record `r`, and
    /// an expression that is 1 when the record matches (for a subscription), with the text
    /// values they take as parameters numbered from `first`. `placeholder` writes parameter n,
    /// `field` the text of a payload's top-level field.
    package func sql(
        first: Int, placeholder: (Int) -> String, field: (String) -> String
    ) -> (
        condition: String, matches: String, values: [String]
    ) {
        var values: [String] = []
        func next(_ value: String) -> String {
            values.append(value)
            return placeholder(first + values.count - 1)
        }
        switch self {
        case .all:
            return ("TRUE", "1", [])
        case .excluding(let types):
            guard !types.isEmpty else { return ("TRUE", "1", []) }
            return ("c.type NOT IN (\(types.map(next).joined(separator: ", ")))", "1", values)
        case .only(let types):
            guard !types.isEmpty else { return ("FALSE", "1", []) }
            return ("c.type IN (\(types.map(next).joined(separator: ", ")))", "1", values)
        case .subscription(let match, let outsideToo):
            let type = "c.type = \(next(match.type))"
            var terms: [String] = []
            for condition in match.values {
                terms.append("\(field(condition.field)) IN (\(condition.values.map(next).joined(separator: ", ")))")
            }
            for window in match.windows {
                if let from = window.from { terms.append("\(field(window.field)) >= \(next(from))") }
                if let to = window.to { terms.append("\(field(window.field)) <= \(next(to))") }
            }
            let matched = terms.isEmpty ? "r.payload IS NOT NULL" : "r.payload IS NOT NULL AND " + terms.joined(separator: " AND ")
            let matches = "CASE WHEN \(matched) THEN 1 ELSE 0 END"
            return (outsideToo ? type : "\(type) AND \(matched)", matches, values)
        }
    }
}

/// A subscription checked against the server's record specs: its type reaches devices only by
/// subscription, and every field it names is one the spec lets devices subscribe by, matched
/// the way the spec says (a date by a window).
package struct SubscriptionMatch: Sendable, Equatable {
    package struct Values: Sendable, Equatable {
        package var field: String
        package var values: [String]
    }

    package struct Window: Sendable, Equatable {
        package var field: String
        package var from: String?
        package var to: String?
    }

    package var type: String
    package var values: [Values]
    package var windows: [Window]

    /// The subscription a query's JSON names, checked against `records`; a refusal names what
    /// is wrong.
    static func checking(_ json: String, against records: RecordRegistry) -> Either<SubscriptionMatch, String> {
        guard json.utf8.count <= SubscriptionQuery.maxBytes else {
            return .second("the subscription is over \(SubscriptionQuery.maxBytes) bytes")
        }
        guard let query = try? JSONDecoder().decode(SubscriptionQuery.self, from: Data(json.utf8)) else {
            return .second("the subscription is not JSON with a type and values or windows by field")
        }
        guard let entry = records[query.type] else {
            return .second("no record type '\(query.type.prefix(128))' is served here")
        }
        guard !entry.subscriptionFields.isEmpty else {
            return .second("\(entry.name) reaches every device without a subscription (its spec has no subscribe_by)")
        }
        // Field names go into the SQL as JSON paths: only a spec's plain names are taken.
        let fields = Dictionary(
            entry.subscriptionFields.filter {
                $0.name.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F }
            }
            .map { ($0.name, $0.match) }, uniquingKeysWith: { a, _ in a })
        let allowed = entry.subscriptionFields.map(\.name).joined(separator: ", ")
        let named = (query.values ?? [:]).count + (query.windows ?? [:]).count
        guard named <= SubscriptionQuery.maxFields else {
            return .second("the subscription names over \(SubscriptionQuery.maxFields) fields")
        }
        var match = SubscriptionMatch(type: entry.name, values: [], windows: [])
        for (field, values) in (query.values ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard fields[field] == .values else {
                return .second(
                    fields[field] == .window
                        ? "\(entry.name).\(field) is a date: subscribe to it by a window"
                        : "\(entry.name) is not subscribed by '\(field.prefix(64))' (its spec says subscribe_by: \(allowed))")
            }
            guard (1...SubscriptionQuery.maxValues).contains(values.count),
                values.allSatisfy({ (1...SubscriptionQuery.maxValueBytes).contains($0.utf8.count) })
            else {
                return .second(
                    "\(field) takes 1 to \(SubscriptionQuery.maxValues) values of 1 to \(SubscriptionQuery.maxValueBytes) bytes")
            }
            match.values.append(Values(field: field, values: values))
        }
        for (field, window) in (query.windows ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard fields[field] == .window else {
                return .second(
                    fields[field] == .values
                        ? "\(entry.name).\(field) is not a date: subscribe to it by values"
                        : "\(entry.name) is not subscribed by '\(field.prefix(64))' (its spec says subscribe_by: \(allowed))")
            }
            let ends = [window.from, window.to].compactMap { $0 }
            guard !ends.isEmpty, ends.allSatisfy({ LocalDate($0) != nil }) else {
                return .second("the window on \(field) takes from and to as YYYY-MM-DD dates, at least one of them")
            }
            if let from = window.from, let to = window.to, from > to { return .second("the window on \(field) ends before it begins") }
            match.windows.append(Window(field: field, from: window.from, to: window.to))
        }
        return .first(match)
    }
}
