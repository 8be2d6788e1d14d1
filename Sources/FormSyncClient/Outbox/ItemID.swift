/// The identity of one item in an outbox: what `enqueue` returns and what every call about
/// that item takes. A type of its own, so that it is never mistaken for a record's, a
/// placeholder's or a server's id, which payloads carry as plain integers.
public struct ItemID: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    /// The number the outbox's database knows the item by.
    public let rawValue: Int64

    /// The item the database knows as `rawValue`.
    public init(rawValue: Int64) {
        self.rawValue = rawValue
    }

    /// The item the database knows as `rawValue` (a number read from a log or a command line).
    public init(_ rawValue: Int64) {
        self.rawValue = rawValue
    }

    /// An item id written as a literal (tests, examples).
    public init(integerLiteral value: Int64) {
        rawValue = value
    }

    /// Decodes the plain integer `encode(to:)` writes.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(Int64.self)
    }

    /// Encodes as a plain integer, as ids were written before `ItemID`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { String(rawValue) }

    public static func < (lhs: ItemID, rhs: ItemID) -> Bool { lhs.rawValue < rhs.rawValue }
}
