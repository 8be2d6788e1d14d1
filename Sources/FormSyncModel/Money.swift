/// An exact amount of money: integer minor units (cents) and an ISO 4217 currency code. It never
/// passes through floating point, in Swift or in JSON (`{"minor_units": 1250, "currency": "EUR"}`).
public struct Money: Codable, Sendable, Hashable, CustomStringConvertible {
    /// The amount in the currency's minor unit (1250 is 12.50 EUR).
    public var minorUnits: Int64
    /// The ISO 4217 code, such as `EUR`.
    public var currency: String

    public init(minorUnits: Int64, currency: String) {
        self.minorUnits = minorUnits
        self.currency = currency
    }

    enum CodingKeys: String, CodingKey {
        case minorUnits = "minor_units"
        case currency
    }

    public var description: String { "\(minorUnits) \(currency) minor units" }
}
