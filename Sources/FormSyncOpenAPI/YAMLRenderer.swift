import FormSyncCodegen

/// Writes a `JSONValue` as block-style YAML that YAML 1.1 and 1.2 readers load as the same
/// JSON: every string double-quoted with JSON's escapes (and `\u` for every character a YAML
/// reader would take as a line break or refuse), every key that is not a plain word quoted (a
/// status code stays a string, `on` and `no` stay words), empty collections in flow style.
public enum YAMLRenderer {
    /// `value` as a YAML document, ending in a newline.
    public static func render(_ value: JSONValue) -> String {
        var out = ""
        switch value {
        case .object(let pairs) where !pairs.isEmpty:
            writeObject(pairs, into: &out, indent: 0)
        case .array(let items) where !items.isEmpty:
            writeArray(items, into: &out, indent: 0)
        default:
            out += scalar(value) + "\n"
        }
        return out
    }

    private static func pad(_ indent: Int) -> String { String(repeating: "  ", count: indent) }

    private static func writeObject(_ pairs: [(String, JSONValue)], into out: inout String, indent: Int, firstInline: Bool = false) {
        for (index, (key, value)) in pairs.enumerated() {
            if !(firstInline && index == 0) { out += pad(indent) }
            out += self.key(key) + ":"
            writeValue(value, into: &out, indent: indent + 1)
        }
    }

    private static func writeArray(_ items: [JSONValue], into out: inout String, indent: Int) {
        for item in items {
            out += pad(indent) + "-"
            switch item {
            case .object(let pairs) where !pairs.isEmpty:
                out += " "
                writeObject(pairs, into: &out, indent: indent + 1, firstInline: true)
            case .array(let inner) where !inner.isEmpty:
                out += "\n"
                writeArray(inner, into: &out, indent: indent + 1)
            default:
                out += " " + scalar(item) + "\n"
            }
        }
    }

    /// What follows `key:` — a scalar on the same line, or a block on the next ones.
    private static func writeValue(_ value: JSONValue, into out: inout String, indent: Int) {
        switch value {
        case .object(let pairs) where !pairs.isEmpty:
            out += "\n"
            writeObject(pairs, into: &out, indent: indent)
        case .array(let items) where !items.isEmpty:
            out += "\n"
            writeArray(items, into: &out, indent: indent)
        default:
            out += " " + scalar(value) + "\n"
        }
    }

    private static func scalar(_ value: JSONValue) -> String {
        switch value {
        case .object: return "{}"
        case .array: return "[]"
        case .string(let text): return quoted(text)
        case .integer(let number): return String(number)
        case .number(let text): return text
        case .bool(let flag): return flag ? "true" : "false"
        case .null: return "null"
        // JSON text is YAML flow style, on one line; its strings are JSON's already, and what a
        // YAML reader would refuse or fold within them is escaped as JSON allows.
        // (Raw tabs and line breaks can only be whitespace between its tokens.)
        case .json(let text):
            return escaped(String(text.unicodeScalars.map { "\t\r\n".unicodeScalars.contains($0) ? " " : Character($0) }), quotes: false)
        }
    }

    /// Words YAML 1.1 reads as booleans or null when plain.
    private static let reserved: Set<String> = ["y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"]

    static func key(_ text: String) -> String {
        let plain =
            text.utf8.first.map { (65...90).contains($0) || (97...122).contains($0) } == true
            && text.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 95 || $0 == 45 }
            && !reserved.contains(text.lowercased())
        return plain ? text : quoted(text)
    }

    /// `text` as a double-quoted scalar: JSON's escapes, and `\u` for controls, DEL, C1, the
    /// byte order mark, non-characters and the line and paragraph separators.
    static func quoted(_ text: String) -> String {
        "\"" + escaped(text, quotes: true) + "\""
    }

    /// `text` with those characters escaped; with `quotes`, `"` and `\` too.
    private static func escaped(_ text: String, quotes: Bool) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"" where quotes: out += "\\\""
            case "\\" where quotes: out += "\\\\"
            case "\n" where quotes: out += "\\n"
            case "\r" where quotes: out += "\\r"
            case "\t" where quotes: out += "\\t"
            default:
                let value = scalar.value
                if value < 0x20 || (0x7F...0x9F).contains(value) || value == 0x2028 || value == 0x2029 || value == 0xFEFF
                    || value == 0xFFFE || value == 0xFFFF
                {
                    let hex = String(value, radix: 16, uppercase: true)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }
}
