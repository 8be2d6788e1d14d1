@_spi(Generated) import FormSyncModel
import Testing

/// Issue 44, defect 6, as `validate()` meets it: a value too costly to check against its
/// pattern is a `pattern` error that says so, found within the budget.
struct FieldValidatorBudgetTests {
    @Test func aValueTooCostlyToCheckIsAPatternErrorThatSaysSo() {
        var validator = FieldValidator()
        let pattern = String(repeating: "[0-9]{0,999}", count: 9) + "x"
        validator.pattern(String(repeating: "7", count: 9_000), pattern, at: "/code")
        #expect(validator.errors.map(\.code) == ["pattern"])
        #expect(validator.errors.first?.detail.contains("Too long to check") == true)
    }

    /// A payload of many such values is bounded as a whole: once its pattern work is spent,
    /// each value left is refused at once, so the payload costs no more than the budget.
    @Test func aPayloadOfManyCostlyValuesStopsOnceItsPatternWorkIsSpent() {
        var validator = FieldValidator()
        validator.patternWorkLeft = 2_500_000
        let pattern = String(repeating: "[0-9]{0,999}", count: 9) + "x"
        for n in 0..<200 { validator.pattern(String(repeating: "7", count: 9_000), pattern, at: "/codes/\(n)") }
        #expect(validator.errors.count == 200)
        #expect(validator.patternWorkLeft == 0)
        // A short value that would match is refused too once nothing is left: the verdict is
        // "too costly", never a false "does not have the format".
        validator.pattern("12x", pattern, at: "/last")
        #expect(validator.errors.last?.detail.contains("Too long to check") == true)
    }
}
