/// Text made safe to stand inside a line comment, in Swift and in JavaScript alike: each
/// language ends a line comment at its own set of line terminators, and the union is split
/// on or flattened here.
enum CommentText {
    /// Whether `scalar` ends a line for Swift or JavaScript, or is a control character that
    /// has no business in a comment.
    static func breaksLine(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0A, 0x0B, 0x0C, 0x0D, 0x85, 0x2028, 0x2029: return true
        default: return false
        }
    }

    /// The lines of `text`, split at every line terminator (CRLF counts as one).
    static func lines(_ text: String) -> [String] {
        var lines: [String] = []
        var current = String.UnicodeScalarView()
        var afterCR = false
        for scalar in text.unicodeScalars {
            defer { afterCR = scalar == "\r" }
            if scalar == "\n" && afterCR { continue }
            if breaksLine(scalar) {
                lines.append(String(current))
                current = String.UnicodeScalarView()
            } else if scalar.value < 0x20 && scalar != "\t" || scalar.value == 0x7F {
                current.append(" ")
            } else {
                current.append(scalar)
            }
        }
        lines.append(String(current))
        return lines
    }

    /// `text` on one line: every line terminator and control character becomes a space.
    static func singleLine(_ text: String) -> String {
        lines(text).joined(separator: " ")
    }
}
