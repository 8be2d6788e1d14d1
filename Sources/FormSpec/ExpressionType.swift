/// The type of an expression's value, as the checker works it out.
public enum ExpressionType: Sendable, Equatable, CustomStringConvertible {
    case integer, decimal, text, boolean, date, time, datetime
    /// Money in minor units; `currency` when the field fixes it.
    case money(currency: String?)
    /// A choice's value: compared with texts, which must be among its options.
    case choice(ChoiceSet)
    case multiChoice(ChoiceSet)
    /// A list field: only `count` takes it whole.
    case list(ListDefinition)
    /// A field an expression may not compute with (a file, a geopoint, a reference).
    case opaque(String)

    public var description: String {
        switch self {
        case .integer: return "an integer"
        case .decimal: return "a decimal"
        case .text: return "a text"
        case .boolean: return "a boolean"
        case .date: return "a date"
        case .time: return "a time"
        case .datetime: return "a datetime"
        case .money(let currency): return currency.map { "money in \($0)" } ?? "money"
        case .choice: return "a choice"
        case .multiChoice: return "a multi-choice"
        case .list: return "a list"
        case .opaque(let name): return "a \(name)"
        }
    }

    public var isNumber: Bool { self == .integer || self == .decimal }
    public var isMoney: Bool { if case .money = self { return true } else { return false } }

    init(_ kind: FieldKind) {
        switch kind {
        case .text: self = .text
        case .integer: self = .integer
        case .decimal: self = .decimal
        case .boolean: self = .boolean
        case .date: self = .date
        case .time: self = .time
        case .datetime: self = .datetime
        case .choice(let set): self = .choice(set)
        case .multiChoice(let set, _): self = .multiChoice(set)
        case .money(_, _, let currency): self = .money(currency: currency)
        case .list(let list): self = .list(list)
        case .geopoint, .reference, .file: self = .opaque(kind.typeName)
        }
    }
}
