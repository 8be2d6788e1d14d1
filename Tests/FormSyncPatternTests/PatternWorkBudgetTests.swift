import Testing

@testable import FormSyncPattern

/// Issue 44, defect 6: a pattern `check` accepts (`[0-9]{0,999}` nine times, then `x`) made one
/// 900 KB submission take a worker for a minute: 81 million steps per 9,000-digit value. The
/// work per value is bounded, the same on every side.
struct PatternWorkBudgetTests {
    static let costly = String(repeating: "[0-9]{0,999}", count: 9) + "x"

    @Test func aValueThatWouldTakeMoreThanTheBudgetIsRefusedWithoutAnAnswer() throws {
        let pattern = try Pattern(Self.costly)
        #expect(pattern.instructionCount > 17_000)
        let digits = String(repeating: "7", count: 9_000)
        #expect(pattern.verdict(digits) == .tooCostly)
        #expect(pattern.verdict(String(repeating: "7", count: 100) + "x") == .match, "a short value is checked as before")
        #expect(pattern.verdict("12y") == .noMatch)
    }

    @Test func theBudgetCountsStepsOfTheMachineNotTheValuesLength() throws {
        // A small pattern keeps few threads alive: a long value stays far within the budget.
        let simple = try Pattern("[A-Z]{2}[0-9]+")
        #expect(simple.verdict("PT" + String(repeating: "1", count: 200_000)) == .match)
        // The same value against a budget it exceeds is refused, whatever its verdict would be.
        #expect(simple.verdict("PT" + String(repeating: "1", count: 200_000), budget: 100_000) == .tooCostly)
    }
}
