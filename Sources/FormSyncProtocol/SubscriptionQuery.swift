import Foundation

/// One subscription as `GET /changes?subscription=` carries it (docs/PROTOCOL.md,
/// "Subscriptions"): a record type whose spec says `subscribe_by:`, and for each field the
/// values, or for a date field the window, its records must have. Conditions on several fields
/// must all hold. Encoded as JSON with sorted keys, percent-encoded in the query.
public struct SubscriptionQuery: Codable, Sendable, Equatable, Hashable {
    /// An inclusive window of dates (`YYYY-MM-DD`); a missing end is open.
    public struct Window: Codable, Sendable, Equatable, Hashable {
        public var from: String?
        public var to: String?

        public init(from: String?, to: String?) {
            self.from = from
            self.to = to
        }
    }

    /// The record type.
    public var type: String
    /// Field → the values a record may have there (compared as text: `"north"`, `"42"`).
    public var values: [String: [String]]?
    /// Date field → the window a record's date must fall in.
    public var windows: [String: Window]?

    public init(type: String, values: [String: [String]]? = nil, windows: [String: Window]? = nil) {
        self.type = type
        self.values = values
        self.windows = windows
    }

    /// The query parameter's name.
    public static let parameter = "subscription"
    /// The most bytes the parameter's JSON may take.
    public static let maxBytes = 8192
    /// The most fields, values per field and bytes per value one subscription may name.
    public static let maxFields = 8
    public static let maxValues = 200
    public static let maxValueBytes = 256

    /// The canonical JSON (sorted keys) sent in the query.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
