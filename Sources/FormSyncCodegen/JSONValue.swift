/// A JSON document with object keys kept in the order they were written, so that generated
/// schemas are deterministic and read in a sensible order.
public indirect enum JSONValue: Sendable, Equatable {
    case object([(String, JSONValue)])
    case array([JSONValue])
    case string(String)
    case integer(Int64)
    /// A number kept as its exact literal text (`12.50`).
    case number(String)
    case bool(Bool)
    case null
    /// A value that is already JSON text (a spec's default, checked and kept as JSON), written
    /// as it is.
    case json(String)

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        a.rendered() == b.rendered()
    }

    /// Pretty-printed with two-space indentation and a final newline.
    public func rendered() -> String {
        var out = ""
        write(into: &out, indent: 0)
        return out + "\n"
    }

    private static let pads = (0..<64).map { String(repeating: "  ", count: $0) }

    private static func pad(_ depth: Int) -> String {
        depth < pads.count ? pads[depth] : String(repeating: "  ", count: depth)
    }

    private func write(into out: inout String, indent: Int) {
        let pad = Self.pad(indent + 1)
        let closePad = Self.pad(indent)
        switch self {
        case .object(let pairs):
            if pairs.isEmpty {
                out += "{}"
                return
            }
            out += "{\n"
            for (i, (key, value)) in pairs.enumerated() {
                out += pad + Self.quoted(key) + ": "
                value.write(into: &out, indent: indent + 1)
                out += i == pairs.count - 1 ? "\n" : ",\n"
            }
            out += closePad + "}"
        case .array(let items):
            if items.isEmpty {
                out += "[]"
                return
            }
            if items.allSatisfy(\.isScalar) {
                var parts: [String] = []
                for item in items {
                    var s = ""
                    item.write(into: &s, indent: 0)
                    parts.append(s)
                }
                out += "[" + parts.joined(separator: ", ") + "]"
                return
            }
            out += "[\n"
            for (i, item) in items.enumerated() {
                out += pad
                item.write(into: &out, indent: indent + 1)
                out += i == items.count - 1 ? "\n" : ",\n"
            }
            out += closePad + "]"
        case .string(let s): out += Self.quoted(s)
        case .integer(let i): out += String(i)
        case .number(let n): out += n
        case .bool(let b): out += b ? "true" : "false"
        case .null: out += "null"
        case .json(let text): out += text
        }
    }

    private var isScalar: Bool {
        switch self {
        case .object, .array: return false
        case .json(let text): return !(text.hasPrefix("{") || text.hasPrefix("["))
        default: return true
        }
    }

    package static func quoted(_ s: String) -> String {
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return "\"" + s + "\""
        }
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
