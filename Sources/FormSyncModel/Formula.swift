import Foundation

/// The operations a spec's expressions compile to (`relevant:`, `constraint:`, `calculate:`,
/// `choice_filter:`): generated code calls these, and the spec interpreter evaluates with them,
/// so both give the same answer. A missing value makes a result unknown (nil), and unknown
/// spreads, except where the answer does not depend on it (`false and x`, `true or x`).
/// Nothing traps: an overflow, a division by zero or a decimal past 38 digits is unknown.
@_spi(Generated) public enum Formula {
    // MARK: Numbers

    public static func add(_ a: Int?, _ b: Int?) -> Int? {
        guard let a, let b else { return nil }
        let (result, overflow) = a.addingReportingOverflow(b)
        return overflow ? nil : result
    }

    public static func subtract(_ a: Int?, _ b: Int?) -> Int? {
        guard let a, let b else { return nil }
        let (result, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? nil : result
    }

    public static func multiply(_ a: Int?, _ b: Int?) -> Int? {
        guard let a, let b else { return nil }
        let (result, overflow) = a.multipliedReportingOverflow(by: b)
        return overflow ? nil : result
    }

    public static func negate(_ a: Int?) -> Int? {
        guard let a, a != .min else { return nil }
        return -a
    }

    /// A field's decimal, exactly; nil when it has none (or more than 38 digits).
    public static func exact(_ value: Decimal?) -> ExactDecimal? {
        value.flatMap(ExactDecimal.init)
    }

    /// An integer where a decimal is needed.
    public static func exact(_ value: Int?) -> ExactDecimal? {
        value.map(ExactDecimal.init)
    }

    /// A decimal literal of an expression.
    public static func literal(_ text: String) -> ExactDecimal? {
        ExactDecimal(text: text)
    }

    public static func add(_ a: ExactDecimal?, _ b: ExactDecimal?) -> ExactDecimal? {
        guard let a, let b else { return nil }
        return a + b
    }

    public static func subtract(_ a: ExactDecimal?, _ b: ExactDecimal?) -> ExactDecimal? {
        guard let a, let b else { return nil }
        return a - b
    }

    public static func multiply(_ a: ExactDecimal?, _ b: ExactDecimal?) -> ExactDecimal? {
        guard let a, let b else { return nil }
        return a * b
    }

    /// `a div b`: rounded half to even to ten places; unknown when `b` is zero.
    public static func divide(_ a: ExactDecimal?, _ b: ExactDecimal?) -> ExactDecimal? {
        guard let a, let b else { return nil }
        return ExactDecimal.divide(a, b)
    }

    public static func negate(_ a: ExactDecimal?) -> ExactDecimal? {
        a?.negated
    }

    /// A calculated decimal as the field stores it.
    public static func decimal(_ value: ExactDecimal?) -> Decimal? {
        value?.decimal
    }

    // MARK: Money, in minor units

    public static func add(_ a: Money?, _ b: Money?) -> Money? {
        guard let a, let b, a.currency == b.currency else { return nil }
        let (result, overflow) = a.minorUnits.addingReportingOverflow(b.minorUnits)
        return overflow ? nil : Money(minorUnits: result, currency: a.currency)
    }

    public static func subtract(_ a: Money?, _ b: Money?) -> Money? {
        add(a, negate(b))
    }

    public static func negate(_ a: Money?) -> Money? {
        guard let a, a.minorUnits != .min else { return nil }
        return Money(minorUnits: -a.minorUnits, currency: a.currency)
    }

    /// Money times a quantity.
    public static func multiply(_ a: Money?, _ n: Int?) -> Money? {
        guard let a, let n else { return nil }
        let (result, overflow) = a.minorUnits.multipliedReportingOverflow(by: Int64(n))
        return overflow ? nil : Money(minorUnits: result, currency: a.currency)
    }

    // MARK: Comparisons

    /// A comparison's operator, applied to an order by `holds`.
    public enum Comparison: Sendable {
        case equal, notEqual, less, lessOrEqual, greater, greaterOrEqual
    }

    /// Whether `order` satisfies `comparison`; unknown when the order is.
    public static func holds(_ order: ComparisonResult?, _ comparison: Comparison) -> Bool? {
        guard let order else { return nil }
        switch comparison {
        case .equal: return order == .orderedSame
        case .notEqual: return order != .orderedSame
        case .less: return order == .orderedAscending
        case .lessOrEqual: return order != .orderedDescending
        case .greater: return order == .orderedDescending
        case .greaterOrEqual: return order != .orderedAscending
        }
    }

    public static func compare<T: Comparable>(_ a: T?, _ b: T?) -> ComparisonResult? {
        guard let a, let b else { return nil }
        return a < b ? .orderedAscending : b < a ? .orderedDescending : .orderedSame
    }

    /// Texts compare by their Unicode scalars, one by one: the order a browser's script gives too.
    public static func compare(_ a: String?, _ b: String?) -> ComparisonResult? {
        guard let a, let b else { return nil }
        if a.unicodeScalars.elementsEqual(b.unicodeScalars) { return .orderedSame }
        return a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars) ? .orderedAscending : .orderedDescending
    }

    /// Money compares only with money of its currency.
    public static func compare(_ a: Money?, _ b: Money?) -> ComparisonResult? {
        guard let a, let b, a.currency == b.currency else { return nil }
        return compare(a.minorUnits, b.minorUnits)
    }

    /// Booleans are equal or not (`.orderedAscending` stands for "not equal").
    public static func compare(_ a: Bool?, _ b: Bool?) -> ComparisonResult? {
        guard let a, let b else { return nil }
        return a == b ? .orderedSame : .orderedAscending
    }

    // MARK: Logic

    public static func and(_ a: Bool?, _ b: @autoclosure () -> Bool?) -> Bool? {
        if a == false { return false }
        let b = b()
        if b == false { return false }
        return a == nil || b == nil ? nil : true
    }

    public static func or(_ a: Bool?, _ b: @autoclosure () -> Bool?) -> Bool? {
        if a == true { return true }
        let b = b()
        if b == true { return true }
        return a == nil || b == nil ? nil : false
    }

    public static func not(_ a: Bool?) -> Bool? {
        a.map { !$0 }
    }

    // MARK: Functions

    /// `length(text)`: Unicode scalars, as a browser's `[...text].length` counts.
    public static func length(_ text: String?) -> Int? {
        text.map { $0.unicodeScalars.count }
    }

    /// `selected(field, 'value')`.
    public static func selected(_ values: [String], _ value: String?) -> Bool? {
        value.map { values.contains($0) }
    }

    /// `if(condition, a, b)`: unknown when the condition is.
    public static func choose<T>(_ condition: Bool?, _ a: @autoclosure () -> T?, _ b: @autoclosure () -> T?) -> T? {
        guard let condition else { return nil }
        return condition ? a() : b()
    }

    /// `sum(...)` over a list's items: items where the value is unknown are left out; over none it is unknown.
    public static func sum(_ values: [Int?]) -> Int? {
        aggregate(values, add)
    }

    public static func sum(_ values: [ExactDecimal?]) -> ExactDecimal? {
        aggregate(values, add)
    }

    public static func sum(_ values: [Money?]) -> Money? {
        aggregate(values, add)
    }

    public static func minimum<T: Comparable>(_ values: [T?]) -> T? {
        aggregate(values) { a, b in b! < a! ? b : a }
    }

    public static func maximum<T: Comparable>(_ values: [T?]) -> T? {
        aggregate(values) { a, b in a! < b! ? b : a }
    }

    /// The smallest money, unknown when the currencies differ.
    public static func minimum(_ values: [Money?]) -> Money? {
        aggregate(values) { a, b in compare(a, b).map { $0 == .orderedDescending ? b! : a! } }
    }

    public static func maximum(_ values: [Money?]) -> Money? {
        aggregate(values) { a, b in compare(a, b).map { $0 == .orderedAscending ? b! : a! } }
    }

    /// Folds the known values in item order; a step that gives unknown makes the whole unknown.
    static func aggregate<T>(_ values: [T?], _ combine: (T?, T?) -> T?) -> T? {
        var result: T?
        for case let value? in values {
            guard let so = result else {
                result = value
                continue
            }
            guard let next = combine(so, value) else { return nil }
            result = next
        }
        return result
    }
}
