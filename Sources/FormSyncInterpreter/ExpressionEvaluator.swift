import FormSpec
import FormSyncModel
import Foundation

/// A value an expression computes, in the types the generated code uses.
enum ExpressionValue: Equatable {
    case integer(Int)
    case decimal(Decimal)
    case money(Money)
    case text(String)
    case boolean(Bool)
    case date(LocalDate)
    case time(LocalTime)
    case datetime(Timestamp)
    /// A multi-choice's selected values.
    case choices([String])
}

/// Evaluates a checked expression on a payload: the semantics the generated Swift (and the
/// preview) are held to. An absent value makes a result unknown (nil), and unknown spreads,
/// except where the answer does not depend on it (`false and x`, `true or x`). Arithmetic never
/// traps: an overflow or a division by zero is unknown. Money stays in minor units.
struct ExpressionEvaluator {
    /// The day and the moment `today()` and `now()` read (injected: tests are deterministic).
    var today: LocalDate
    var now: Timestamp

    /// The value of `expression` on `object` (its level), `parent` being the level above.
    func value(of expression: SpecExpression, in object: InterpretedObject, parent: InterpretedObject?) -> ExpressionValue? {
        evaluate(expression, object: object, parent: parent, item: nil)
    }

    /// A boolean expression's verdict: true, false, or nil when it cannot be known.
    func holds(_ expression: SpecExpression, in object: InterpretedObject, parent: InterpretedObject?) -> Bool? {
        if case .boolean(let value) = value(of: expression, in: object, parent: parent) { return value }
        return nil
    }

    private func evaluate(
        _ node: SpecExpression, object: InterpretedObject, parent: InterpretedObject?, item: (list: String, values: InterpretedObject)?
    ) -> ExpressionValue? {
        func sub(_ node: SpecExpression) -> ExpressionValue? { evaluate(node, object: object, parent: parent, item: item) }
        switch node.kind {
        case .integer(let value): return Int(exactly: value).map(ExpressionValue.integer)
        case .decimal(let digits): return Decimal(string: digits, locale: Locale(identifier: "en_US_POSIX")).map(ExpressionValue.decimal)
        case .text(let text): return .text(text)
        case .boolean(let value): return .boolean(value)
        case .field(let path):
            if path.names.count == 2 {
                guard let item, item.list == path.names[0] else { return nil }
                return Self.convert(item.values.values[path.names[1]])
            }
            let level = path.up == 0 ? object : parent
            return Self.convert(level?.values[path.names[0]])
        case .negate(let inner):
            switch sub(inner) {
            case .integer(let value): return value.multipliedReportingOverflow(by: -1).overflow ? nil : .integer(-value)
            case .decimal(let value): return .decimal(-value)
            case .money(let money):
                return money.minorUnits == .min ? nil : .money(Money(minorUnits: -money.minorUnits, currency: money.currency))
            default: return nil
            }
        case .not(let inner):
            if case .boolean(let value) = sub(inner) { return .boolean(!value) }
            return nil
        case .binary(let op, let left, let right):
            return binary(op, left, right, sub)
        case .call(let function, let arguments):
            return call(function, arguments, object: object, parent: parent, item: item, sub)
        }
    }

    private static func convert(_ value: InterpretedValue?) -> ExpressionValue? {
        switch value {
        case .integer(let v): return .integer(v)
        case .decimal(let v): return .decimal(v)
        case .money(let v): return .money(v)
        case .text(let v), .choice(let v): return .text(v)
        case .boolean(let v): return .boolean(v)
        case .date(let v): return .date(v)
        case .time(let v): return .time(v)
        case .datetime(let v): return .datetime(v)
        case .choices(let v): return .choices(v)
        default: return nil
        }
    }

    private static func decimal(_ value: ExpressionValue?) -> Decimal? {
        switch value {
        case .integer(let v): return Decimal(v)
        case .decimal(let v): return v
        default: return nil
        }
    }

    private func binary(
        _ op: SpecExpression.BinaryOperator, _ left: SpecExpression, _ right: SpecExpression, _ sub: (SpecExpression) -> ExpressionValue?
    ) -> ExpressionValue? {
        switch op {
        case .and, .or:
            // Three-valued: the right side is read only when the left does not settle it.
            let a: Bool? = if case .boolean(let v) = sub(left) { v } else { nil }
            if a == (op == .or) { return .boolean(op == .or) }
            let b: Bool? = if case .boolean(let v) = sub(right) { v } else { nil }
            if b == (op == .or) { return .boolean(op == .or) }
            guard a != nil, b != nil else { return nil }
            return .boolean(op == .and)
        case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual:
            guard let a = sub(left), let b = sub(right), let order = Self.compare(a, b, equalityOnly: op == .equal || op == .notEqual)
            else { return nil }
            switch op {
            case .equal: return .boolean(order == .orderedSame)
            case .notEqual: return .boolean(order != .orderedSame)
            case .less: return .boolean(order == .orderedAscending)
            case .lessOrEqual: return .boolean(order != .orderedDescending)
            case .greater: return .boolean(order == .orderedDescending)
            default: return .boolean(order != .orderedAscending)
            }
        case .plus, .minus, .times:
            let (a, b) = (sub(left), sub(right))
            switch (a, b) {
            case (.integer(let x), .integer(let y)):
                let (result, overflow) =
                    op == .plus
                    ? x.addingReportingOverflow(y) : op == .minus ? x.subtractingReportingOverflow(y) : x.multipliedReportingOverflow(by: y)
                return overflow ? nil : .integer(result)
            case (.money(let x), .money(let y)) where op != .times:
                guard x.currency == y.currency else { return nil }
                let (result, overflow) =
                    op == .plus
                    ? x.minorUnits.addingReportingOverflow(y.minorUnits) : x.minorUnits.subtractingReportingOverflow(y.minorUnits)
                return overflow ? nil : .money(Money(minorUnits: result, currency: x.currency))
            case (.money(let money), .integer(let n)) where op == .times, (.integer(let n), .money(let money)) where op == .times:
                let (result, overflow) = money.minorUnits.multipliedReportingOverflow(by: Int64(n))
                return overflow ? nil : .money(Money(minorUnits: result, currency: money.currency))
            default:
                guard let x = Self.decimal(a), let y = Self.decimal(b) else { return nil }
                return .decimal(op == .plus ? x + y : op == .minus ? x - y : x * y)
            }
        case .divide:
            guard let x = Self.decimal(sub(left)), let y = Self.decimal(sub(right)), !y.isZero else { return nil }
            return .decimal(x / y)
        }
    }

    /// How `a` stands against `b`; nil when they cannot be compared (money in two currencies).
    private static func compare(_ a: ExpressionValue, _ b: ExpressionValue, equalityOnly: Bool) -> ComparisonResult? {
        func order<T: Comparable>(_ x: T, _ y: T) -> ComparisonResult {
            x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
        }
        switch (a, b) {
        case (.integer(let x), .integer(let y)): return order(x, y)
        case (.money(let x), .money(let y)): return x.currency == y.currency ? order(x.minorUnits, y.minorUnits) : nil
        case (.text(let x), .text(let y)): return equalityOnly ? (x == y ? .orderedSame : .orderedAscending) : order(x, y)
        case (.boolean(let x), .boolean(let y)): return x == y ? .orderedSame : .orderedAscending
        case (.date(let x), .date(let y)): return order(x, y)
        case (.time(let x), .time(let y)): return order(x, y)
        case (.datetime(let x), .datetime(let y)): return order(x, y)
        default:
            guard let x = decimal(a), let y = decimal(b) else { return nil }
            return order(x, y)
        }
    }

    private func call(
        _ function: SpecExpression.Function, _ arguments: [SpecExpression], object: InterpretedObject, parent: InterpretedObject?,
        item: (list: String, values: InterpretedObject)?, _ sub: (SpecExpression) -> ExpressionValue?
    ) -> ExpressionValue? {
        switch function {
        case .today: return .date(today)
        case .now: return .datetime(now)
        case .length:
            // Unicode scalars: the same count a browser's [...text].length gives.
            if case .text(let text) = sub(arguments[0]) { return .integer(text.unicodeScalars.count) }
            return nil
        case .selected:
            guard case .choices(let selected) = sub(arguments[0]), case .text(let value) = sub(arguments[1]) else { return nil }
            return .boolean(selected.contains(value))
        case .if:
            guard case .boolean(let condition) = sub(arguments[0]) else { return nil }
            return sub(condition ? arguments[1] : arguments[2])
        case .count:
            guard case .field(let path) = arguments[0].kind, case .list(let items) = object.values[path.names[0]] else {
                return .integer(0)
            }
            return .integer(items.count)
        case .sum, .min, .max:
            // Over the items of the list the argument's columns name; items where it is unknown
            // are left out; none left is unknown.
            guard let list = arguments[0].columnLists.first else { return nil }
            let items: [InterpretedObject] = if case .list(let items) = object.values[list] { items } else { [] }
            let values = items.compactMap { evaluate(arguments[0], object: object, parent: parent, item: (list, $0)) }
            guard var result = values.first else { return nil }
            for value in values.dropFirst() {
                switch function {
                case .sum:
                    guard let next = add(result, value) else { return nil }
                    result = next
                default:
                    guard let order = Self.compare(value, result, equalityOnly: false) else { return nil }
                    if (function == .min && order == .orderedAscending) || (function == .max && order == .orderedDescending) {
                        result = value
                    }
                }
            }
            return result
        }
    }

    private func add(_ a: ExpressionValue, _ b: ExpressionValue) -> ExpressionValue? {
        switch (a, b) {
        case (.integer(let x), .integer(let y)):
            let (sum, overflow) = x.addingReportingOverflow(y)
            return overflow ? nil : .integer(sum)
        case (.money(let x), .money(let y)):
            guard x.currency == y.currency else { return nil }
            let (sum, overflow) = x.minorUnits.addingReportingOverflow(y.minorUnits)
            return overflow ? nil : .money(Money(minorUnits: sum, currency: x.currency))
        default:
            guard let x = Self.decimal(a), let y = Self.decimal(b) else { return nil }
            return .decimal(x + y)
        }
    }

}
