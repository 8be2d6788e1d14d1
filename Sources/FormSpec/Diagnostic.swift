/// A position in a spec file, 1-based, as editors and compilers show it.
public struct SourceLocation: Hashable, Sendable, Comparable {
    /// 1-based line.
    public var line: Int
    /// 1-based column.
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public static func < (a: SourceLocation, b: SourceLocation) -> Bool {
        (a.line, a.column) < (b.line, b.column)
    }
}

/// One problem found in a spec, reported in the `path:line:column: severity: message` form that
/// SwiftPM, Xcode and most editors turn into an inline marker.
public struct Diagnostic: Hashable, Sendable, CustomStringConvertible {
    /// How serious a problem is: errors stop code generation, warnings do not.
    public enum Severity: String, Sendable, Hashable {
        case error, warning
    }

    public var severity: Severity
    /// The spec file as the caller named it.
    public var path: String
    public var location: SourceLocation
    public var message: String

    public init(_ severity: Severity, path: String, at location: SourceLocation, _ message: String) {
        self.severity = severity
        self.path = path
        self.location = location
        self.message = message
    }

    /// The diagnostic as one line: `path:line:column: error: message`.
    public var description: String {
        "\(path):\(location.line):\(location.column): \(severity.rawValue): \(message)"
    }
}

extension Array where Element == Diagnostic {
    /// Diagnostics in reading order: by file, then line, then column; ties keep their order.
    public func sortedForDisplay() -> [Diagnostic] {
        enumerated().sorted { a, b in
            if a.element.path != b.element.path { return a.element.path < b.element.path }
            if a.element.location != b.element.location { return a.element.location < b.element.location }
            return a.offset < b.offset
        }.map(\.element)
    }

    /// Whether any of these stops code generation.
    public var hasErrors: Bool { contains { $0.severity == .error } }
}
