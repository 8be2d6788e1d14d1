import FormSyncPattern
import Foundation

/// Checking a form's endpoint: its placeholders, its path, and that it is no protocol route.
extension SpecChecker {
    mutating func checkEndpoint(_ value: String, node: YAMLNode, fields: [FieldDefinition]) -> [EndpointSegment] {
        let offset = node.isPlainScalar ? 0 : 1
        func column(_ index: String.Index) -> SourceLocation {
            SourceLocation(
                line: node.location.line, column: node.location.column + offset + value.distance(from: value.startIndex, to: index))
        }
        if !value.hasPrefix("/") {
            error(node.location, "endpoint must be a path starting with '/'")
        }
        var segments: [EndpointSegment] = []
        var literal = ""
        var index = value.startIndex
        while index < value.endIndex {
            let ch = value[index]
            if ch != "{" { literal.append(ch) }
            if ch == "}" {
                error(column(index), "'}' without a matching '{' in endpoint")
            } else if ch == "{" {
                guard let close = value[index...].firstIndex(of: "}") else {
                    error(column(index), "'{' is not closed in endpoint")
                    break
                }
                let placeholder = String(value[value.index(after: index)..<close])
                if !literal.isEmpty { segments.append(.literal(literal)) }
                literal = ""
                if let field = fields.first(where: { $0.name == placeholder }) {
                    if !field.kind.canNameAPath {
                        error(
                            column(index),
                            "endpoint placeholder {\(placeholder)} is \(article(field.kind.typeName)) \(field.kind.typeName) field; a path needs a text, integer, choice or reference field"
                        )
                    } else if !field.required {
                        error(
                            column(index),
                            "endpoint placeholder {\(placeholder)} names a field that is not required; the endpoint could not be built without it"
                        )
                    } else {
                        segments.append(.field(placeholder))
                    }
                } else {
                    error(
                        column(index), "endpoint placeholder {\(placeholder)} names no field\(suggestion(placeholder, fields.map(\.name)))")
                }
                index = close
            } else if ch == " " || ch == "?" || ch == "#" {
                error(column(index), "endpoint may not contain '\(ch)'")
            }
            index = value.index(after: index)
        }
        if !literal.isEmpty { segments.append(.literal(literal)) }
        checkPathSegments(value, at: column)
        checkNotAProtocolRoute(value, at: column)
        return segments
    }

    /// The first segments of the protocol's own routes (docs/PROTOCOL.md, §2): a form posted
    /// there would reach the route, not the form, and every submission would be refused.
    static let protocolRoutes = [
        "auth", "files", "uploads", "changes", "records", "documents", "health", "pending-files", "support", "submissions", "webhooks",
        "console",
    ]

    /// A form's endpoint must not begin with a protocol route, nor with a placeholder (whose
    /// value could spell one).
    mutating func checkNotAProtocolRoute(_ value: String, at column: (String.Index) -> SourceLocation) {
        guard value.hasPrefix("/") else { return }
        let start = value.index(after: value.startIndex)
        let first = value[start...].prefix { $0 != "/" }
        if first.hasPrefix("{") {
            error(
                column(start),
                "endpoint must begin with literal text, not a placeholder: a value such as 'files' would send the form to a protocol route")
        } else if Self.protocolRoutes.contains(first.lowercased()) {
            error(
                column(start),
                "endpoint /\(first) is a route of the protocol itself (\(Self.protocolRoutes.map { "/" + $0 }.joined(separator: ", "))); choose another path"
            )
        }
    }

    /// Each `/`-separated segment must be non-empty, neither `.` nor `..` (a client's URL stack
    /// would remove them and readdress the request), and built from URI path characters (docs/PROTOCOL.md, "Standards").
    mutating func checkPathSegments(_ value: String, at column: (String.Index) -> SourceLocation) {
        guard value.hasPrefix("/") else { return }
        var start = value.index(after: value.startIndex)
        while true {
            let end = value[start...].firstIndex(of: "/") ?? value.endIndex
            let segment = value[start..<end]
            if segment.isEmpty {
                error(
                    column(start < value.endIndex ? start : value.index(before: start)),
                    "endpoint has an empty path segment ('//' or a trailing '/')")
            } else if segment == "." || segment == ".." {
                error(
                    column(start),
                    "endpoint segment '\(segment)' is not allowed: URL stacks remove dot segments and would send the request elsewhere")
            } else if let bad = segment.unicodeScalars.first(where: { !Self.isPathCharacter($0) && $0 != "{" && $0 != "}" }) {
                if bad != " " && bad != "?" && bad != "#" {  // reported above
                    error(column(start), "endpoint may not contain '\(bad)'; use letters, digits and - . _ ~ ! $ & ' ( ) * + , ; = : @")
                }
            }
            guard end < value.endIndex else { break }
            start = value.index(after: end)
        }
    }

    static func isPathCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9": return true
        default: return "-._~!$&'()*+,;=:@".unicodeScalars.contains(scalar)
        }
    }
}
