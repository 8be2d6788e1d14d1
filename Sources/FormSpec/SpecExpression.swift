/// An expression of the spec language, as `relevant:`, `constraint:`, `calculate:` and
/// `choice_filter:` hold it: parsed (and, by the checker, typed) when the spec is checked, so a
/// mistake is a build error at its column, and turned into plain Swift by the generator.
public struct SpecExpression: Sendable, Equatable {
    /// What a node is. Children are expressions of their own, each with its offset.
    public indirect enum Kind: Sendable, Equatable {
        /// A whole number, such as `90`.
        case integer(Int64)
        /// A decimal number, kept exactly as written (`2.5`): never a binary floating point.
        case decimal(String)
        /// A text in quotes: `'field'`.
        case text(String)
        case boolean(Bool)
        /// A field: `name` or `.name` at this level, `../name` one level up, `lines.quantity` a
        /// list's column (inside `count`, `sum`, `min` or `max`).
        case field(FieldPath)
        case negate(SpecExpression)
        case not(SpecExpression)
        case binary(BinaryOperator, SpecExpression, SpecExpression)
        case call(Function, [SpecExpression])
    }

    /// A field named by an expression.
    public struct FieldPath: Sendable, Equatable, CustomStringConvertible {
        /// How many levels up (`../`), 0 for this level.
        public var up: Int
        /// The names, outermost first: `["lines", "quantity"]` for `lines.quantity`.
        public var names: [String]

        public var description: String { String(repeating: "../", count: up) + names.joined(separator: ".") }
    }

    public enum BinaryOperator: String, Sendable, Equatable, CaseIterable {
        case or, and
        case equal = "="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case plus = "+"
        case minus = "-"
        case times = "*"
        case divide = "div"
    }

    /// The functions an expression may call: no others, and none of the author's own.
    public enum Function: String, Sendable, Equatable, CaseIterable {
        case count, sum, min, max
        case `if`
        case today, now
        case length, selected
        /// `money(12.50, 'EUR')`: a constant amount in major units of a currency (ISO 4217).
        case money
    }

    /// The amount a checked `money(amount, 'CUR')` stands for, in minor units, with its currency;
    /// nil for any other node. What the translators write in place of the call.
    public var moneyConstant: (minorUnits: Int64, currency: String)? {
        guard case .call(.money, let arguments) = kind, arguments.count == 2, case .text(let currency) = arguments[1].kind,
            let digits = CurrencyTable.minorDigits(currency), let amount = Self.numberText(arguments[0])
        else { return nil }
        return CurrencyTable.minorUnits(amount, digits: digits).map { ($0, currency) }
    }

    /// A number literal, or its negation, as text (`-12.50`); nil for anything else.
    static func numberText(_ node: SpecExpression) -> String? {
        switch node.kind {
        case .integer(let value): return String(value)
        case .decimal(let digits): return digits
        case .negate(let inner):
            guard let text = numberText(inner), !text.hasPrefix("-") else { return nil }
            return "-" + text
        default: return nil
        }
    }

    public var kind: Kind
    /// Where the node starts, in characters from the start of the expression's text.
    public var offset: Int
    /// The node's type, set by the checker: what the generator translates by.
    public var type: ExpressionType?

    /// The lists whose columns the expression names (`lines` for `lines.quantity * lines.unit_price`,
    /// once per column named), in reading order: what an aggregate ranges over.
    public var columnLists: [String] {
        switch kind {
        case .field(let path) where path.names.count == 2 && path.up == 0: return [path.names[0]]
        case .negate(let inner), .not(let inner): return inner.columnLists
        case .binary(_, let a, let b): return a.columnLists + b.columnLists
        case .call(_, let arguments): return arguments.flatMap(\.columnLists)
        default: return []
        }
    }

    /// The fields the expression reads, each path once per mention, in reading order.
    public var fieldPaths: [FieldPath] {
        switch kind {
        case .field(let path): return [path]
        case .negate(let inner), .not(let inner): return inner.fieldPaths
        case .binary(_, let a, let b): return a.fieldPaths + b.fieldPaths
        case .call(_, let arguments): return arguments.flatMap(\.fieldPaths)
        default: return []
        }
    }

    /// Whether the expression reads the clock (`today()`, `now()`).
    public var readsClock: Bool {
        switch kind {
        case .call(.today, _), .call(.now, _): return true
        case .negate(let inner), .not(let inner): return inner.readsClock
        case .binary(_, let a, let b): return a.readsClock || b.readsClock
        case .call(_, let arguments): return arguments.contains(where: \.readsClock)
        default: return false
        }
    }

    /// The expression in one spelling, whatever its spacing and parentheses: two expressions
    /// that mean the same have the same canonical text (the lock and `diff` compare these).
    public var canonicalText: String {
        switch kind {
        case .integer(let value): return String(value)
        case .decimal(let digits): return digits
        case .text(let text): return "'" + text + "'"
        case .boolean(let value): return value ? "true" : "false"
        case .field(let path): return path.description
        case .negate(let inner): return "-" + inner.operand
        case .not(let inner): return "not " + inner.operand
        case .binary(let op, let a, let b): return a.operand + " " + op.rawValue + " " + b.operand
        case .call(let function, let arguments):
            return function.rawValue + "(" + arguments.map(\.canonicalText).joined(separator: ", ") + ")"
        }
    }

    /// The canonical text, in parentheses when it is an operation.
    private var operand: String {
        switch kind {
        case .binary, .negate, .not: return "(" + canonicalText + ")"
        default: return canonicalText
        }
    }

    /// Whether two expressions mean the same, however they are spaced or parenthesised.
    public func sameMeaning(as other: SpecExpression) -> Bool {
        switch (kind, other.kind) {
        case (.negate(let a), .negate(let b)), (.not(let a), .not(let b)): return a.sameMeaning(as: b)
        case (.binary(let x, let a1, let a2), .binary(let y, let b1, let b2)):
            return x == y && a1.sameMeaning(as: b1) && a2.sameMeaning(as: b2)
        case (.call(let f, let a), .call(let g, let b)):
            return f == g && a.count == b.count && zip(a, b).allSatisfy { $0.sameMeaning(as: $1) }
        case (.field(let a), .field(let b)): return a == b
        default: return kind == other.kind
        }
    }

    public init(_ kind: Kind, at offset: Int) {
        self.kind = kind
        self.offset = offset
    }
}
