import Foundation
import Testing

@testable import FormSyncCodegen

/// Decimal bounds in generated validation are written as sign, exponent and significand (no
/// parse per call); each must be the same number, with the same text in an error message, as
/// `Decimal(string:)` of the spec's bound.
struct DecimalLiteralTests {
    /// Evaluates the literal the generator wrote, for the forms it can take.
    static func evaluate(_ literal: String) -> Decimal? {
        if literal.hasPrefix("Decimal(string: ") {
            let quoted = literal.dropFirst("Decimal(string: \"".count).dropLast("\")".count)
            return Decimal(string: String(quoted), locale: Locale(identifier: "en_US_POSIX"))
        }
        let pattern = #"^Decimal\(sign: \.(plus|minus), exponent: (-?[0-9]+), significand: Decimal\(([0-9]+)\)\)$"#
        guard let match = literal.range(of: pattern, options: .regularExpression), match == literal.startIndex..<literal.endIndex else {
            return nil
        }
        let parts = literal.replacingOccurrences(of: pattern, with: "$1 $2 $3", options: .regularExpression).split(separator: " ")
        guard parts.count == 3, let exponent = Int(parts[1]), let significand = Int64(parts[2]) else { return nil }
        return Decimal(sign: parts[0] == "minus" ? .minus : .plus, exponent: exponent, significand: Decimal(significand))
    }

    @Test func everyBoundIsTheNumberItsSpecTextParsesTo() throws {
        let bounds = [
            "0", "30", "-40.0", "60.5", "0.001", "-0.5", "+7", "100000000000000000", "123456789012345678", "1234567890123456789",
            "99999999999999999999.5", "0.000000000000000000001", "-0", "007.250", "1e5", "12.", ".5",
            // The smallest the checker lets through (128 digits after the point): still exact.
            "0." + String(repeating: "0", count: 127) + "1", "-0." + String(repeating: "0", count: 120) + "25",
        ]
        for bound in bounds {
            let literal = SwiftGenerator.decimalLiteral(bound)
            let expected = Decimal(string: bound, locale: Locale(identifier: "en_US_POSIX"))
            let value = Self.evaluate(literal)
            #expect(value == expected, "\(bound) → \(literal)")
            #expect(value?.description == expected?.description, "\(bound) → \(literal)")
        }
        #expect(SwiftGenerator.decimalLiteral("60.5").hasPrefix("Decimal(sign:"))
        #expect(SwiftGenerator.decimalLiteral("1234567890123456789").hasPrefix("Decimal(string:"))
        #expect(SwiftGenerator.decimalLiteral(nil) == "nil")
    }
}
