import Testing

@testable import FormSpec

/// The expression language's parser: precedence, paths, and every refusal at its column.
struct ExpressionParserTests {
    func parse(_ text: String) -> SpecExpression? { try? ExpressionParser.parse(text).get() }

    func failure(_ text: String) -> ExpressionParser.Failure? {
        if case .failure(let failure) = ExpressionParser.parse(text) { return failure }
        return nil
    }

    @Test func multiplicationBindsTighterThanAdditionAndComparisonsThanAnd() throws {
        let sum = try #require(parse("a + b * c"))
        guard case .binary(.plus, let a, let product) = sum.kind, case .binary(.times, _, _) = product.kind else {
            Issue.record("\(sum)")
            return
        }
        #expect(a.kind == .field(.init(up: 0, names: ["a"])))
        #expect(product.offset == 6)
        let logic = try #require(parse("not passed = false and count(lines) > 0 or x"))
        guard case .binary(.or, let left, _) = logic.kind, case .binary(.and, let negated, _) = left.kind, case .not = negated.kind else {
            Issue.record("\(logic)")
            return
        }
    }

    @Test func fieldPathsNameThisLevelTheLevelAboveAndAListsColumn() throws {
        #expect(parse("../region")?.kind == .field(.init(up: 1, names: ["region"])))
        #expect(parse(".name")?.kind == .field(.init(up: 0, names: ["name"])))
        #expect(parse("lines.unit_price")?.kind == .field(.init(up: 0, names: ["lines", "unit_price"])))
        #expect(parse("'it''s'") == nil)
        #expect(parse("2.50")?.kind == .decimal("2.50"))
        #expect(parse("today()")?.kind == .call(.today, []))
    }

    @Test(arguments: [
        ("a +", 3, "expected a value, a field or '(' here, found the end of the expression"),
        ("'open", 0, "the text starting here has no closing '"),
        ("foo(1)", 0, "unknown function 'foo' (expected one of: count, sum, min, max, if, today, now, length, selected, money)"),
        ("1 < 2 < 3", 6, "comparisons do not chain: write a < b and b < c"),
        ("a b", 2, "unexpected 'b' after a complete expression"),
        ("99999999999999999999", 0, "the number 99999999999999999999 is too large (at most 9223372036854775807)"),
        ("a & b", 2, "'&' has no meaning in an expression"),
        ("sum(a, )", 7, "expected a value, a field or '(' here, found ')'"),
        ("(a", 0, "this '(' is never closed: expected ')' before the end of the expression"),
        ("", 0, "the expression is empty"),
        ("2x", 1, "a number runs into a name; put a space or an operator between them"),
        ("and a", 0, "'and' needs an operand before it"),
    ])
    func aMistakeIsRefusedAtItsColumn(_ text: String, _ offset: Int, _ message: String) {
        #expect(failure(text) == ExpressionParser.Failure(offset: offset, message: message))
    }

    @Test func hostileExpressionsAreBoundedNotRecursedInto() {
        let deep = String(repeating: "(", count: 5000) + "1" + String(repeating: ")", count: 5000)
        #expect(failure(deep)?.message == "the expression is longer than 2000 characters")
        let nested = String(repeating: "(", count: 200) + "1" + String(repeating: ")", count: 200)
        #expect(failure(nested)?.message.hasPrefix("the expression nests deeper than") == true)
        let wide = (0..<500).map { "a\($0)" }.joined(separator: " + ")
        #expect(failure(String(wide.prefix(1990)))?.message.hasPrefix("the expression has more than") == true)
    }
}

/// The expression language's types: each rule of the issue, on a form that has them all.
struct ExpressionCheckerTests {
    static let spec = """
        form: Inspection
        version: 1
        endpoint: /inspections
        choices:
          region: [north, south]
        fields:
          passed: boolean
          failure_reason: text
          arrival: time
          departure: time
          quantity: integer
          stock: integer
          total: { type: money, currency: EUR }
          tip: { type: money, currency: USD }
          region: { type: choice, options: region }
          tags: { type: multi_choice, options: [fragile, cold] }
          photo: photo
          lines:
            type: list
            fields:
              sku: text
              quantity: integer
              unit_price: { type: money, currency: EUR }
        """

    func check(_ text: String) throws -> (type: ExpressionType?, problems: [String]) {
        let form = try #require(SpecLoader.check(text: Self.spec, path: "Inspection.yaml").form)
        let expression = try ExpressionParser.parse(text).get()
        var checker = ExpressionChecker(scope: ExpressionScope(fields: form.fields, parent: nil))
        let type = checker.type(of: expression)
        return (type, checker.problems.map { "\($0.offset): \($0.message)" })
    }

    @Test(arguments: [
        ("departure > arrival", "a boolean"),
        ("quantity <= stock", "a boolean"),
        ("sum(lines.quantity * lines.unit_price)", "money in EUR"),
        ("count(lines) > 0 and not passed", "a boolean"),
        ("if(passed, 1, 2.5)", "a decimal"),
        ("region = 'north'", "a boolean"),
        ("selected(tags, 'cold')", "a boolean"),
        ("length(failure_reason) < 200", "a boolean"),
        ("total - sum(lines.unit_price)", "money in EUR"),
        ("max(lines.quantity) div 2", "a decimal"),
        ("today()", "a date"),
        ("total - money(2.50, 'EUR')", "money in EUR"),
        ("money(1200, 'JPY')", "money in JPY"),
        ("if(passed, total, money(-0.5, 'EUR'))", "money in EUR"),
    ])
    func aWellTypedExpressionHasItsType(_ text: String, _ type: String) throws {
        let result = try check(text)
        #expect(result.problems.isEmpty, "\(result.problems)")
        #expect(result.type?.description == type)
    }

    @Test(arguments: [
        ("passd = false", "0: no field 'passd' here (did you mean 'passed'?)"),
        ("total + 5", "6: money and an integer do not add up: write money on both sides (a bare number has no currency)"),
        ("total + tip", "6: money in EUR and money in USD do not add up"),
        ("region = 'nowhere'", "9: 'nowhere' is not an option of region (expected one of: north, south); the comparison could never hold"),
        ("lines.quantity > 1", "0: 'lines.quantity' is a column of the list 'lines': use it inside count, sum, min or max"),
        ("../quantity > 1", "0: '../' reaches above the form"),
        ("sum(quantity)", "4: sum() takes a list's column, such as sum(lines.quantity)"),
        ("photo = 'x'", "6: a photo and a text cannot be compared"),
        ("total * 1.5", "6: money times a decimal is not exact: multiply money by an integer (a quantity)"),
        ("passed < true", "7: booleans are equal or not; '<' does not order them"),
        ("if(quantity, 1, 2)", "3: if() takes a boolean first, not an integer"),
        ("today(1)", "0: today() takes 0 arguments, not 1"),
        ("total + money(1, 'USD')", "6: money in EUR and money in USD do not add up"),
        ("money(1.234, 'EUR')", "6: EUR has 2 decimal places; 1.234 has 3"),
        ("money(1, 'eur')", "9: 'eur' is not a currency of ISO 4217 (did you mean 'EUR'?)"),
        ("lines.sku2 = 'a'", "0: the list 'lines' has no field 'sku2' (did you mean 'sku'?)"),
    ])
    func aMistakeIsReportedAtItsOperandWithWhatToDo(_ text: String, _ problem: String) throws {
        let result = try check(text)
        #expect(result.type == nil)
        #expect(result.problems == [problem])
    }
}

/// Expressions as keys of a spec: typed, stored on their fields, settled in order.
struct SpecExpressionKeyTests {
    static let order = """
        form: Order
        version: 1
        endpoint: /orders
        choices:
          district:
            - { value: harbour, region: north }
            - { value: coast, region: south }
        fields:
          approval: { type: text, relevant: total > deposit }
          total: { type: money, calculate: sum(lines.amount) }
          deposit: money
          region: { type: choice, options: [north, south] }
          district: { type: choice, options: district, choice_filter: option.region = region }
          lines:
            type: list
            fields:
              quantity: integer
              price: money
              amount: { type: money, calculate: quantity * price }
              note: { type: text, relevant: ../region = 'north', constraint: length(note) < 20, constraint_message: Keep it short. }
        """

    @Test func settleStepsPutEachFieldAfterWhatItReads() throws {
        let form = try #require(SpecLoader.check(text: Self.order, path: "Order.yaml").form)
        #expect(form.settleSteps.map(\.description) == ["lines.amount", "total", "approval", "lines.note"])
    }

    @Test func expressionsAreStoredTypedWithTheirTextAndPlace() throws {
        let form = try #require(SpecLoader.check(text: Self.order, path: "Order.yaml").form)
        let total = try #require(form.field(named: "total")?.calculate)
        #expect(total.text == "sum(lines.amount)")
        #expect(total.expression.type == .money(currency: nil))
        #expect(total.location == SourceLocation(line: 10, column: 36))
        guard case .list(let lines) = form.field(named: "lines")?.kind else {
            Issue.record("lines is not a list")
            return
        }
        let note = try #require(lines.fields.first { $0.name == "note" })
        #expect(note.relevant?.expression.type == .boolean)
        #expect(note.constraintMessage == "Keep it short.")
        guard case .choice(let set) = form.field(named: "district")?.kind else {
            Issue.record("district is not a choice")
            return
        }
        #expect(set.columns == ["region"])
        #expect(set.options.map(\.columnValues) == [["north"], ["south"]])
        #expect(form.field(named: "district")?.choiceFilter?.text == "option.region = region")
    }
}

/// ISO 4217's minor units: what a money constant written in major units is in minor units.
struct CurrencyTableTests {
    @Test func minorUnitsFollowEachCurrencysDigits() {
        #expect(CurrencyTable.minorUnits("12.50", digits: CurrencyTable.minorDigits("EUR")!) == 1250)
        #expect(CurrencyTable.minorUnits("12.5", digits: 2) == 1250)
        #expect(CurrencyTable.minorUnits("1200", digits: CurrencyTable.minorDigits("JPY")!) == 1200)
        #expect(CurrencyTable.minorUnits("1.250", digits: CurrencyTable.minorDigits("KWD")!) == 1250)
        #expect(CurrencyTable.minorUnits("-0.5", digits: 2) == -50)
        #expect(CurrencyTable.minorUnits("12.5", digits: 0) == nil)
        #expect(CurrencyTable.minorUnits("92233720368547758.07", digits: 2) == Int64.max)
        #expect(CurrencyTable.minorUnits("92233720368547758.08", digits: 2) == nil)
        #expect(CurrencyTable.minorUnits("1e3", digits: 2) == nil)
        #expect(CurrencyTable.minorUnits("", digits: 2) == nil)
    }

    @Test func theTableKnowsTheCurrenciesInUseAndNothingElse() {
        #expect(CurrencyTable.minorDigits("EUR") == 2 && CurrencyTable.minorDigits("USD") == 2)
        #expect(CurrencyTable.minorDigits("JPY") == 0 && CurrencyTable.minorDigits("BHD") == 3 && CurrencyTable.minorDigits("CLF") == 4)
        #expect(
            CurrencyTable.minorDigits("eur") == nil && CurrencyTable.minorDigits("EURO") == nil && CurrencyTable.minorDigits("XAU") == nil)
        #expect(CurrencyTable.all.count > 150 && Set(CurrencyTable.all.map(\.code)).count == CurrencyTable.all.count)
    }
}
