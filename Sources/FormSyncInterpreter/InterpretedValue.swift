import FormSpec
@_spi(Generated) import FormSyncModel
import Foundation

/// One field's value in a payload read by the interpreter: the same Swift type the generated
/// code decodes it into, so comparisons, validation and encoding come out the same.
indirect enum InterpretedValue: Equatable {
    case text(String)
    case integer(Int)
    case decimal(Decimal)
    case boolean(Bool)
    case date(LocalDate)
    case time(LocalTime)
    case datetime(Timestamp)
    case choice(String)
    case choices([String])
    case money(Money)
    case geopoint(GeoPoint)
    case reference(EntityRef)
    case file(FileRef)
    case files([FileRef])
    case list([InterpretedObject])

    /// The JSON the generated code writes for this value.
    func encoded() throws -> Data {
        switch self {
        case .text(let v), .choice(let v): return try FormRegistry.encode(v)
        case .integer(let v): return try FormRegistry.encode(v)
        case .decimal(let v): return try FormRegistry.encode(v)
        case .boolean(let v): return try FormRegistry.encode(v)
        case .date(let v): return try FormRegistry.encode(v)
        case .time(let v): return try FormRegistry.encode(v)
        case .datetime(let v): return try FormRegistry.encode(v)
        case .choices(let v): return try FormRegistry.encode(v)
        case .money(let v): return try FormRegistry.encode(v)
        case .geopoint(let v): return try FormRegistry.encode(v)
        case .reference(let v): return try FormRegistry.encode(v)
        case .file(let v): return try FormRegistry.encode(v)
        case .files(let v): return try FormRegistry.encode(v)
        case .list(let items):
            var out = Data("[".utf8)
            for (offset, item) in items.enumerated() {
                if offset > 0 { out.append(0x2C) }
                out.append(try item.encoded())
            }
            out.append(0x5D)
            return out
        }
    }
}

/// A payload (or a list item) read by the interpreter: each declared field's value, nil when
/// absent. Lists and multi-valued fields are never nil (an absent one is empty), as in the
/// generated types.
struct InterpretedObject: Equatable {
    var values: [String: InterpretedValue]
    let fields: [FieldDefinition]

    static func == (a: InterpretedObject, b: InterpretedObject) -> Bool { a.values == b.values }

    /// The JSON the generated code writes: sorted keys, absent optionals left out, lists
    /// always written.
    func encoded() throws -> Data {
        var object = JSONObjectSlices()
        for field in fields {
            if let value = values[field.name] {
                object.set(field.name, try value.encoded())
            } else if InterpretedObject.isMultiple(field) {
                object.set(field.name, Data("[]".utf8))
            }
        }
        return object.data
    }

    static func isMultiple(_ field: FieldDefinition) -> Bool { field.kind.holdsSeveralValues }

    /// A decoding problem, with the JSON path (keys and indexes) of the value that failed.
    struct DecodeFailure: Error {
        var path: [String]
        var detail: String

        var fieldError: FieldError {
            FieldError(pointer: path.reduce(JSONPointer.root) { JSONPointer.appending($0, $1) }, code: "invalid", detail: detail)
        }
    }

    /// Reads `json` as the generated `init(from:)` would: fields in declaration order, the
    /// first value that does not decode stops everything.
    static func decode(_ json: Data, fields: [FieldDefinition], path: [String] = []) throws -> InterpretedObject {
        guard let slices = JSONObjectSlices(json) else { throw DecodeFailure(path: path, detail: "Expected an object.") }
        var values: [String: InterpretedValue] = [:]
        for field in fields {
            guard let raw = slices[field.name], raw != Data("null".utf8) else {
                // As the generated types: a multi-valued field left out holds nothing.
                switch field.kind {
                case .multiChoice: values[field.name] = .choices([])
                case .list: values[field.name] = .list([])
                case .file(_, let rule) where rule.multiple: values[field.name] = .files([])
                default: break
                }
                continue
            }
            let fieldPath = path + [field.name]
            values[field.name] = try decodeValue(raw, field: field, path: fieldPath)
        }
        return InterpretedObject(values: values, fields: fields)
    }

    static func decodeValue(_ raw: Data, field: FieldDefinition, path: [String]) throws -> InterpretedValue {
        func typed<T: Decodable>(_ type: T.Type) throws -> T {
            do {
                return try JSONDecoder().decode(T.self, from: raw)
            } catch let error as DecodingError {
                var inner: [String] = []
                var detail = "The value could not be read."
                switch error {
                case .typeMismatch(let type, let context):
                    inner = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
                    detail = "Expected \(type)."
                case .valueNotFound(let type, let context):
                    inner = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
                    detail = "Expected \(type), found null."
                case .keyNotFound(let key, let context):
                    inner = (context.codingPath + [key]).map { $0.intValue.map(String.init) ?? $0.stringValue }
                    detail = "This field is missing."
                case .dataCorrupted(let context):
                    inner = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
                    detail = context.debugDescription
                @unknown default:
                    break
                }
                throw DecodeFailure(path: path + inner, detail: detail)
            }
        }
        func option(_ value: String, _ set: ChoiceSet, at path: [String]) throws -> String {
            guard set.options.contains(where: { $0.value == value }) else {
                throw DecodeFailure(path: path, detail: "Cannot initialize \(set.typeName) from invalid String value \(value)")
            }
            return value
        }
        switch field.kind {
        case .text: return .text(try typed(String.self))
        case .integer: return .integer(try typed(Int.self))
        case .decimal: return .decimal(try typed(Decimal.self))
        case .boolean: return .boolean(try typed(Bool.self))
        case .date: return .date(try typed(LocalDate.self))
        case .time: return .time(try typed(LocalTime.self))
        case .datetime: return .datetime(try typed(Timestamp.self))
        case .choice(let set): return .choice(try option(try typed(String.self), set, at: path))
        case .multiChoice(let set, _):
            let list = try typed([String].self)
            return .choices(try list.enumerated().map { try option($0.element, set, at: path + [String($0.offset)]) })
        case .money: return .money(try typed(Money.self))
        case .geopoint: return .geopoint(try typed(GeoPoint.self))
        case .reference: return .reference(try typed(EntityRef.self))
        case .file(_, let rule): return rule.multiple ? .files(try typed([FileRef].self)) : .file(try typed(FileRef.self))
        case .list(let list):
            guard let items = JSONObjectSlices.elements(ofArray: raw) else {
                throw DecodeFailure(path: path, detail: "Expected to decode Array<Any> but found another value instead.")
            }
            return .list(try items.enumerated().map { try decode($0.element, fields: list.fields, path: path + [String($0.offset)]) })
        }
    }
}
