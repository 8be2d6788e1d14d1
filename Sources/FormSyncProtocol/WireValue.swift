/// A JSON value as the wire carries it: what a history entry's field held before and after a
/// change (`FieldChange`), and a submission's payload in the submissions feed
/// (`SubmissionEvent.record`), for a reader that has no form type for it.
public indirect enum WireValue: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    /// A whole number (JSON integers up to 2^63 − 1 in magnitude).
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([WireValue])
    case object([String: WireValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([WireValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: WireValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The member `name` of an object (nil for anything else, or when it is absent).
    public subscript(_ name: String) -> WireValue? {
        guard case .object(let members) = self else { return nil }
        return members[name]
    }
}
