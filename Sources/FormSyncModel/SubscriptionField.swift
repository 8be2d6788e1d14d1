/// A field a device may subscribe to records of a type by (`subscribe_by:`), with how a
/// subscription matches it: a date by a window, any other field by a list of values.
public struct SubscriptionField: Sendable, Equatable, Hashable {
    /// How a subscription names the records it wants by this field.
    public enum Match: String, Sendable, Equatable, Hashable {
        /// One of a list of values (text, choice, reference, integer), compared as text.
        case values
        /// A window of dates, either end optional, both ends included.
        case window
    }

    /// The field's spec name.
    public let name: String
    public let match: Match

    public init(_ name: String, _ match: Match) {
        self.name = name
        self.match = match
    }
}
