/// Accumulates source text line by line with four-space indentation.
package struct CodeWriter {
    package private(set) var text = ""
    private var depth = 0

    package init() {}

    private static let indents = (0..<32).map { String(repeating: "    ", count: $0) }

    private static func indent(_ depth: Int) -> String {
        depth < indents.count ? indents[depth] : String(repeating: "    ", count: depth)
    }

    package mutating func line(_ s: String = "") {
        if s.isEmpty {
            text += "\n"
        } else {
            text += Self.indent(depth) + s + "\n"
        }
    }

    /// Writes `header {`, the body one level deeper, then `}`.
    package mutating func block(_ header: String, _ body: (inout CodeWriter) -> Void) {
        line(header + " {")
        depth += 1
        body(&self)
        depth -= 1
        line("}")
    }

    /// Writes `header { parameters in`, the closure's body one level deeper, then `}`.
    package mutating func closure(_ header: String, parameters: String, _ body: (inout CodeWriter) -> Void) {
        line(header + " { " + parameters + " in")
        depth += 1
        body(&self)
        depth -= 1
        line("}")
    }

    /// Writes a `switch` whose `case` lines stand at the switch's own level, as Swift style has it.
    package mutating func switchBlock(_ header: String, _ body: (inout CodeWriter) -> Void) {
        line(header + " {")
        body(&self)
        line("}")
    }

    /// Writes a `///` doc comment, one line per line of `text`. Spec text is the author's,
    /// and any line break in it (CR, CRLF, LS, PS, NEL, VT, FF as well as LF) starts a new
    /// comment line: one left inside a line would end the comment, and the rest would compile.
    package mutating func doc(_ text: String) {
        for part in CommentText.lines(text) {
            let trimmed = Substring(part).trimmingTrailingSpaces()
            line(trimmed.isEmpty ? "///" : "/// " + trimmed)
        }
    }

    /// Writes a `//` comment of one line, whatever `text` holds (a spec's file name may hold
    /// a line break).
    package mutating func comment(_ text: String) {
        line("// " + CommentText.singleLine(text))
    }
}

extension Substring {
    package func trimmingTrailingSpaces() -> String {
        var s = String(self)
        while s.last == " " || s.last == "\t" { s.removeLast() }
        return s
    }
}

/// A Swift string literal for any text.
func swiftLiteral(_ value: String) -> String {
    if !value.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
        return "\"" + value + "\""
    }
    var out = "\""
    for scalar in value.unicodeScalars {
        switch scalar {
        case "\\": out += "\\\\"
        case "\"": out += "\\\""
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if scalar.value < 0x20 || scalar.value == 0x7F {
                out += "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}
