import Foundation

/// A decimal number as expressions compute with it: a significand of at most 38 digits and a
/// power of ten, every operation exact or unknown (nil). Foundation's `Decimal` rounds a product
/// past its 38 digits without saying so; the generated code, the interpreter and the preview's
/// script must give the same digits, so expressions use this instead.
public struct ExactDecimal: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The digits: |significand| < 10^38, no trailing zero (zero is 0 × 10^0).
    public let significand: Int128
    /// The power of ten, within ±`maxExponent`.
    public let exponent: Int

    static let limit: Int128 = 100_000_000_000_000_000_000_000_000_000_000_000_000
    static let maxExponent = 200
    /// The places `div` rounds its quotient to, half to even.
    public static let divisionPlaces = 10

    /// The normalized number, or nil when it needs more than 38 digits or its exponent is out of range.
    public init?(significand: Int128, exponent: Int) {
        var s = significand
        var e = exponent
        if s == 0 {
            e = 0
        } else {
            while s % 10 == 0 {
                s /= 10
                e += 1
            }
        }
        guard s > -Self.limit, s < Self.limit, abs(e) <= Self.maxExponent else { return nil }
        self.significand = s
        self.exponent = e
    }

    public init(_ integer: Int) {
        self.init(significand: Int128(integer), exponent: 0)!
    }

    /// A Foundation decimal's exact value; nil for NaN or more than 38 digits.
    public init?(_ decimal: Decimal) {
        guard !decimal.isNaN, let digits = ExactDecimal(text: decimal.significand.description) else { return nil }
        let significand = decimal.sign == .minus ? -digits.significand : digits.significand
        self.init(significand: significand, exponent: digits.exponent + decimal.exponent)
    }

    /// Digits as written (`-12.50`, `3`); nil for anything else or more than 38 digits.
    public init?(text: String) {
        var digits = Substring(text)
        let negative = digits.hasPrefix("-")
        if negative { digits = digits.dropFirst() }
        let parts = digits.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, let whole = parts.first, !whole.isEmpty else { return nil }
        let fraction = parts.count == 2 ? parts[1] : ""
        guard (whole + fraction).allSatisfy({ $0.isASCII && $0.isNumber }), parts.count == 1 || !fraction.isEmpty else { return nil }
        var s: Int128 = 0
        for digit in (whole + fraction).drop(while: { $0 == "0" }) {
            let (shifted, o1) = s.multipliedReportingOverflow(by: 10)
            let (next, o2) = shifted.addingReportingOverflow(Int128(digit.wholeNumberValue!))
            guard !o1, !o2, next < Self.limit else { return nil }
            s = next
        }
        self.init(significand: negative ? -s : s, exponent: -fraction.count)
    }

    /// The Foundation decimal of the same value.
    public var decimal: Decimal {
        Decimal(string: description, locale: Locale(identifier: "en_US_POSIX")) ?? .nan
    }

    /// Plain digits, no exponent: `-12.5`, `300`, `0.001`.
    public var description: String {
        let negative = significand < 0
        var digits = String(significand.magnitude)
        if exponent >= 0 {
            digits += String(repeating: "0", count: significand == 0 ? 0 : exponent)
        } else {
            let places = -exponent
            if digits.count <= places { digits = String(repeating: "0", count: places - digits.count + 1) + digits }
            digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -places))
        }
        return (negative ? "-" : "") + digits
    }

    /// `value` × 10^`power`, or nil when it overflows.
    static func scaled(_ value: Int128, by power: Int) -> Int128? {
        var result = value
        for _ in 0..<power {
            let (next, overflow) = result.multipliedReportingOverflow(by: 10)
            if overflow { return nil }
            result = next
            if result == 0 { break }
        }
        return result
    }

    /// Both significands at the smaller exponent; nil when one no longer fits.
    static func aligned(_ a: ExactDecimal, _ b: ExactDecimal) -> (Int128, Int128, Int)? {
        let e = Swift.min(a.exponent, b.exponent)
        guard let x = scaled(a.significand, by: a.exponent - e), let y = scaled(b.significand, by: b.exponent - e) else { return nil }
        return (x, y, e)
    }

    public static func + (a: ExactDecimal, b: ExactDecimal) -> ExactDecimal? {
        guard let (x, y, e) = aligned(a, b) else { return nil }
        let (sum, overflow) = x.addingReportingOverflow(y)
        return overflow ? nil : ExactDecimal(significand: sum, exponent: e)
    }

    public static func - (a: ExactDecimal, b: ExactDecimal) -> ExactDecimal? {
        a + b.negated
    }

    public static func * (a: ExactDecimal, b: ExactDecimal) -> ExactDecimal? {
        let (product, overflow) = a.significand.multipliedReportingOverflow(by: b.significand)
        return overflow ? nil : ExactDecimal(significand: product, exponent: a.exponent + b.exponent)
    }

    public var negated: ExactDecimal { ExactDecimal(significand: -significand, exponent: exponent)! }

    /// `a / b` rounded half to even to `divisionPlaces` places; nil for a zero divisor or when
    /// the digits do not fit.
    public static func divide(_ a: ExactDecimal, _ b: ExactDecimal) -> ExactDecimal? {
        guard b.significand != 0 else { return nil }
        let k = a.exponent - b.exponent + divisionPlaces
        var numerator = a.significand
        var denominator = b.significand
        if k >= 0 {
            guard let n = scaled(numerator, by: k) else { return nil }
            numerator = n
        } else {
            guard let d = scaled(denominator, by: -k) else { return nil }
            denominator = d
        }
        if denominator < 0 {
            guard numerator != .min, denominator != .min else { return nil }
            numerator = -numerator
            denominator = -denominator
        }
        var quotient = numerator / denominator
        let remainder = (numerator % denominator).magnitude
        let rest = denominator.magnitude - remainder
        if remainder > rest || (remainder == rest && quotient % 2 != 0) {
            quotient += numerator < 0 ? -1 : 1
        }
        return ExactDecimal(significand: quotient, exponent: -divisionPlaces)
    }

    public static func < (a: ExactDecimal, b: ExactDecimal) -> Bool {
        if (a.significand < 0) != (b.significand < 0) { return a.significand < 0 }
        guard let (x, y, _) = aligned(a, b) else {
            // The one that no longer fits is the larger in magnitude.
            let aLarger = a.exponent > b.exponent
            return a.significand < 0 ? aLarger : !aLarger
        }
        return x < y
    }
}
