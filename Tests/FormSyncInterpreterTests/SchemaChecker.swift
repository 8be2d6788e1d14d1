import Foundation

/// Just enough of JSON Schema draft 2020-12 to check the schemas FormSync generates: `$ref`
/// into `$defs`, `type`, `enum`, `const`, `properties`, `required`, `additionalProperties`,
/// `propertyNames`, `items`, `minItems`, `maxItems`, `uniqueItems`, `minLength`, `maxLength`
/// (code points), `pattern` (searched, not anchored), `minimum`, `maximum`, `not`, `allOf`,
/// `if`/`then`/`else`; `type` as one name or a list.
/// `format` is an annotation, as the draft says. Test support, not a general validator.
struct SchemaChecker {
    indirect enum JSON: Equatable {
        case null
        case bool(Bool)
        case number(Decimal)
        case string(String)
        case array([JSON])
        case object([(String, JSON)])

        static func == (a: JSON, b: JSON) -> Bool {
            switch (a, b) {
            case (.null, .null): return true
            case (.bool(let x), .bool(let y)): return x == y
            case (.number(let x), .number(let y)): return x == y
            case (.string(let x), .string(let y)): return x == y
            case (.array(let x), .array(let y)): return x == y
            case (.object(let x), .object(let y)):
                return x.count == y.count && x.allSatisfy { pair in y.contains { $0.0 == pair.0 && $0.1 == pair.1 } }
            default: return false
            }
        }

        subscript(key: String) -> JSON? {
            if case .object(let pairs) = self { return pairs.first { $0.0 == key }?.1 }
            return nil
        }
    }

    /// A small JSON reader that keeps numbers exact and booleans apart from numbers.
    struct Reader {
        let scalars: [Unicode.Scalar]
        var index = 0

        init(_ text: String) { scalars = Array(text.unicodeScalars) }

        mutating func space() { while index < scalars.count, " \n\r\t".unicodeScalars.contains(scalars[index]) { index += 1 } }

        mutating func value() -> JSON? {
            space()
            guard index < scalars.count else { return nil }
            switch scalars[index] {
            case "{":
                index += 1
                var pairs: [(String, JSON)] = []
                space()
                if index < scalars.count, scalars[index] == "}" {
                    index += 1
                    return .object(pairs)
                }
                while true {
                    space()
                    guard case .string(let key)? = value() else { return nil }
                    space()
                    guard index < scalars.count, scalars[index] == ":" else { return nil }
                    index += 1
                    guard let v = value() else { return nil }
                    pairs.append((key, v))
                    space()
                    guard index < scalars.count else { return nil }
                    if scalars[index] == "," {
                        index += 1
                        continue
                    }
                    if scalars[index] == "}" {
                        index += 1
                        return .object(pairs)
                    }
                    return nil
                }
            case "[":
                index += 1
                var items: [JSON] = []
                space()
                if index < scalars.count, scalars[index] == "]" {
                    index += 1
                    return .array(items)
                }
                while true {
                    guard let v = value() else { return nil }
                    items.append(v)
                    space()
                    guard index < scalars.count else { return nil }
                    if scalars[index] == "," {
                        index += 1
                        continue
                    }
                    if scalars[index] == "]" {
                        index += 1
                        return .array(items)
                    }
                    return nil
                }
            case "\"":
                index += 1
                var text = ""
                while index < scalars.count, scalars[index] != "\"" {
                    if scalars[index] == "\\" {
                        index += 1
                        guard index < scalars.count else { return nil }
                        switch scalars[index] {
                        case "n": text += "\n"
                        case "t": text += "\t"
                        case "r": text += "\r"
                        case "u":
                            let hex = String(String.UnicodeScalarView(scalars[(index + 1)..<min(index + 5, scalars.count)]))
                            guard let code = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(code) else { return nil }
                            text.unicodeScalars.append(scalar)
                            index += 4
                        default: text.unicodeScalars.append(scalars[index])
                        }
                    } else {
                        text.unicodeScalars.append(scalars[index])
                    }
                    index += 1
                }
                index += 1
                return .string(text)
            case "t":
                index += 4
                return .bool(true)
            case "f":
                index += 5
                return .bool(false)
            case "n":
                index += 4
                return .null
            default:
                let start = index
                while index < scalars.count, "-+.eE0123456789".unicodeScalars.contains(scalars[index]) { index += 1 }
                return Decimal(string: String(String.UnicodeScalarView(scalars[start..<index]))).map { .number($0) }
            }
        }
    }

    let root: JSON

    init(schema text: String) {
        var reader = Reader(text)
        root = reader.value() ?? .null
    }

    static func parse(_ text: String) -> JSON? {
        var reader = Reader(text)
        return reader.value()
    }

    func accepts(_ instance: JSON) -> Bool { check(instance, root) }

    func check(_ value: JSON, _ schema: JSON) -> Bool {
        if case .bool(let b) = schema { return b }
        if case .string(let ref)? = schema["$ref"], ref.hasPrefix("#/$defs/"),
            let target = root["$defs"]?[String(ref.dropFirst("#/$defs/".count))]
        {
            guard check(value, target) else { return false }
        }
        var types: [String] = []
        if case .string(let type)? = schema["type"] { types = [type] }
        if case .array(let list)? = schema["type"] {
            types = list.compactMap { if case .string(let t) = $0 { return t } else { return nil } }
        }
        if !types.isEmpty {
            let fits = types.contains { type in
                switch (type, value) {
                case ("string", .string), ("boolean", .bool), ("array", .array), ("object", .object), ("null", .null), ("number", .number):
                    return true
                case ("integer", .number(var n)):
                    var whole = Decimal()
                    NSDecimalRound(&whole, &n, 0, .plain)
                    return whole == n
                default: return false
                }
            }
            if !fits { return false }
        }
        if case .array(let options)? = schema["enum"], !options.contains(value) { return false }
        if let constant = schema["const"], constant != value { return false }
        if case .string(let text) = value {
            let length = text.unicodeScalars.count
            if case .number(let min)? = schema["minLength"], Decimal(length) < min { return false }
            if case .number(let max)? = schema["maxLength"], Decimal(length) > max { return false }
            if case .string(let pattern)? = schema["pattern"] {
                guard let regex = try? NSRegularExpression(pattern: pattern) else { return false }
                if regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) == nil { return false }
            }
        }
        if case .number(let n) = value {
            if case .number(let min)? = schema["minimum"], n < min { return false }
            if case .number(let max)? = schema["maximum"], n > max { return false }
        }
        if case .array(let items) = value {
            if case .number(let min)? = schema["minItems"], Decimal(items.count) < min { return false }
            if case .number(let max)? = schema["maxItems"], Decimal(items.count) > max { return false }
            if schema["uniqueItems"] == .bool(true) {
                for (i, a) in items.enumerated() where items[(i + 1)...].contains(a) { return false }
            }
            if let itemSchema = schema["items"], !items.allSatisfy({ check($0, itemSchema) }) { return false }
        }
        if case .object(let pairs) = value {
            if case .array(let required)? = schema["required"] {
                for case .string(let name) in required where !pairs.contains(where: { $0.0 == name }) { return false }
            }
            let properties = schema["properties"]
            for (key, member) in pairs {
                if let names = schema["propertyNames"], !check(.string(key), names) { return false }
                if let propertySchema = properties?[key] {
                    if !check(member, propertySchema) { return false }
                } else if let additional = schema["additionalProperties"], !check(member, additional) {
                    return false
                }
            }
        }
        if let negated = schema["not"], check(value, negated) { return false }
        if case .array(let all)? = schema["allOf"], !all.allSatisfy({ check(value, $0) }) { return false }
        if let condition = schema["if"] {
            if check(value, condition) {
                if let then = schema["then"], !check(value, then) { return false }
            } else if let otherwise = schema["else"], !check(value, otherwise) {
                return false
            }
        }
        return true
    }
}
