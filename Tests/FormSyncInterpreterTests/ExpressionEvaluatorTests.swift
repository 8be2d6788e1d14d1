import FormSyncModel
import Foundation
import Testing

@testable import FormSpec
@testable import FormSyncInterpreter

/// The semantics of expressions (issue 36, started): unknown spreads except where the answer
/// does not depend on it, arithmetic never traps, money stays exact in minor units.
struct ExpressionEvaluatorTests {
    static let form = SpecLoader.check(
        text: """
            form: Visit
            version: 1
            endpoint: /visits
            fields:
              passed: boolean
              note: text
              arrival: time
              departure: time
              quantity: integer
              stock: integer
              tags: { type: multi_choice, options: [fragile, cold] }
              lines:
                type: list
                fields:
                  quantity: integer
                  unit_price: { type: money, currency: EUR }
            """, path: "Visit.yaml"
    ).form!

    static let evaluator = ExpressionEvaluator(today: LocalDate("2026-12-04")!, now: Timestamp(millisecondsSince1970: 1_796_000_000_000))

    func line(_ quantity: Int?, _ cents: Int64?) -> InterpretedObject {
        guard case .list(let list) = Self.form.fields.first(where: { $0.name == "lines" })!.kind else { fatalError() }
        var values: [String: InterpretedValue] = [:]
        if let quantity { values["quantity"] = .integer(quantity) }
        if let cents { values["unit_price"] = .money(Money(minorUnits: cents, currency: "EUR")) }
        return InterpretedObject(values: values, fields: list.fields)
    }

    func evaluate(_ text: String, _ values: [String: InterpretedValue]) throws -> ExpressionValue? {
        let expression = try ExpressionParser.parse(text).get()
        var checker = ExpressionChecker(scope: ExpressionScope(fields: Self.form.fields, parent: nil))
        #expect(checker.type(of: expression) != nil, "\(checker.problems)")
        return Self.evaluator.value(of: expression, in: InterpretedObject(values: values, fields: Self.form.fields), parent: nil)
    }

    @Test func comparisonsOfTimesAndAnAbsentOperandIsUnknown() throws {
        let times: [String: InterpretedValue] = ["arrival": .time(LocalTime("09:00:00")!), "departure": .time(LocalTime("10:15:00")!)]
        #expect(try evaluate("departure > arrival", times) == .boolean(true))
        #expect(try evaluate("departure > arrival", ["departure": .time(LocalTime("10:15:00")!)]) == nil)
    }

    @Test func andAndOrAreSettledByOneSideWhenTheOtherIsUnknown() throws {
        #expect(try evaluate("passed or quantity > 1", ["passed": .boolean(true)]) == .boolean(true))
        #expect(try evaluate("passed or quantity > 1", ["passed": .boolean(false)]) == nil)
        #expect(try evaluate("passed and quantity > 1", ["passed": .boolean(false)]) == .boolean(false))
        #expect(try evaluate("quantity > 1 and passed", ["passed": .boolean(false)]) == .boolean(false))
        #expect(try evaluate("not passed", [:]) == nil)
    }

    @Test func aSumOfMoneyIsExactLeavesOutUnknownItemsAndIsUnknownOverNone() throws {
        let lines: [String: InterpretedValue] = ["lines": .list([line(2, 999), line(3, 100), line(nil, 5)])]
        #expect(try evaluate("sum(lines.quantity * lines.unit_price)", lines) == .money(Money(minorUnits: 2298, currency: "EUR")))
        #expect(try evaluate("count(lines)", lines) == .integer(3))
        #expect(try evaluate("max(lines.quantity)", lines) == .integer(3))
        #expect(try evaluate("sum(lines.quantity * lines.unit_price)", ["lines": .list([])]) == nil)
        #expect(try evaluate("count(lines)", ["lines": .list([])]) == .integer(0))
    }

    @Test func arithmeticNeverTrapsAnOverflowOrADivisionByZeroIsUnknown() throws {
        #expect(try evaluate("quantity * stock", ["quantity": .integer(Int.max), "stock": .integer(2)]) == nil)
        #expect(try evaluate("-quantity", ["quantity": .integer(Int.min)]) == nil)
        #expect(try evaluate("quantity div stock", ["quantity": .integer(1), "stock": .integer(0)]) == nil)
        #expect(
            try evaluate("quantity div stock", ["quantity": .integer(1), "stock": .integer(4)]) == .decimal(ExactDecimal(text: "0.25")!))
        let huge = ["lines": InterpretedValue.list([line(2, Int64.max)])]
        #expect(try evaluate("sum(lines.quantity * lines.unit_price)", huge) == nil)
    }

    @Test func theFunctionsReadTheInjectedClockTheSelectionAndUnicodeScalars() throws {
        #expect(try evaluate("today()", [:]) == .date(LocalDate("2026-12-04")!))
        #expect(try evaluate("selected(tags, 'cold')", ["tags": .choices(["cold"])]) == .boolean(true))
        #expect(try evaluate("selected(tags, 'fragile')", ["tags": .choices(["cold"])]) == .boolean(false))
        #expect(try evaluate("length(note)", ["note": .text("né👍")]) == .integer(3))
        #expect(try evaluate("if(passed, 1, 2)", ["passed": .boolean(false)]) == .integer(2))
        #expect(try evaluate("if(passed, 1, 2)", [:]) == nil)
    }
}
