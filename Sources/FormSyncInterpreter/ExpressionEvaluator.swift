import FormSpec
@_spi(Generated) import FormSyncModel
import Foundation

/// A value an expression computes, in the types the generated code computes with.
enum ExpressionValue: Equatable {
    case integer(Int)
    case decimal(ExactDecimal)
    case money(Money)
    case text(String)
    case boolean(Bool)
    case date(LocalDate)
    case time(LocalTime)
    case datetime(Timestamp)
    /// A multi-choice's selected values.
    case choices([String])
    /// A list field, for `count`.
    case count(Int)
}

/// Evaluates a checked expression on a payload read by the interpreter, through the same
/// `Formula` operations the generated code calls, so the two agree by construction: unknown
/// (nil) spreads except where `and`/`or` are settled by one side, nothing traps, money stays in
/// minor units, decimals are exact or unknown.
struct ExpressionEvaluator {
    /// What `today()` and `now()` read (the generated code reads `FormClock.current` too).
    var clock: FormClock

    init(clock: FormClock = FormClock.current) {
        self.clock = clock
    }

    init(today: LocalDate, now: Timestamp) {
        self.init(clock: .fixed(today: today, now: now))
    }

    /// Where an expression is evaluated: its level, the level above, the item an aggregate is
    /// at, the option a `choice_filter` is asked about.
    struct Context {
        var object: InterpretedObject
        var parent: InterpretedObject?
        var item: (list: String, values: InterpretedObject)? = nil
        var option: (option: ChoiceOption, columns: [String])? = nil
    }

    /// The value of `expression` on `object` (its level), `parent` being the level above.
    func value(of expression: SpecExpression, in object: InterpretedObject, parent: InterpretedObject?) -> ExpressionValue? {
        evaluate(expression, Context(object: object, parent: parent))
    }

    /// A boolean expression's verdict: true, false, or nil when it cannot be known.
    func holds(_ expression: SpecExpression, in context: Context) -> Bool? {
        if case .boolean(let value) = evaluate(expression, context) { return value }
        return nil
    }

    func holds(_ expression: SpecExpression, in object: InterpretedObject, parent: InterpretedObject?) -> Bool? {
        holds(expression, in: Context(object: object, parent: parent))
    }

    func evaluate(_ node: SpecExpression, _ context: Context) -> ExpressionValue? {
        func sub(_ node: SpecExpression) -> ExpressionValue? { evaluate(node, context) }
        switch node.kind {
        case .integer(let value): return Int(exactly: value).map(ExpressionValue.integer)
        case .decimal(let digits): return Formula.literal(digits).map(ExpressionValue.decimal)
        case .text(let text): return .text(text)
        case .boolean(let value): return .boolean(value)
        case .field(let path): return field(path, context)
        case .negate(let inner):
            switch sub(inner) {
            case .integer(let v): return Formula.negate(v).map(ExpressionValue.integer)
            case .decimal(let v): return .decimal(v.negated)
            case .money(let v): return Formula.negate(v).map(ExpressionValue.money)
            default: return nil
            }
        case .not(let inner):
            return Formula.not(Self.boolean(sub(inner))).map(ExpressionValue.boolean)
        case .binary(let op, let left, let right):
            return binary(op, left, right, sub)
        case .call(let function, let arguments):
            return call(function, arguments, node, context, sub)
        }
    }

    private func field(_ path: SpecExpression.FieldPath, _ context: Context) -> ExpressionValue? {
        if let (option, columns) = context.option, path.up == 0, path.names.count == 2, path.names[0] == "option" {
            guard let index = columns.firstIndex(of: path.names[1]), index < option.columnValues.count else { return nil }
            return .text(option.columnValues[index])
        }
        if path.names.count == 2 {
            guard let item = context.item, item.list == path.names[0] else { return nil }
            return Self.convert(item.values.values[path.names[1]])
        }
        let level = path.up == 0 ? context.object : context.parent
        return Self.convert(level?.values[path.names[0]])
    }

    static func convert(_ value: InterpretedValue?) -> ExpressionValue? {
        switch value {
        case .integer(let v): return .integer(v)
        case .decimal(let v): return Formula.exact(v).map(ExpressionValue.decimal)
        case .money(let v): return .money(v)
        case .text(let v), .choice(let v): return .text(v)
        case .boolean(let v): return .boolean(v)
        case .date(let v): return .date(v)
        case .time(let v): return .time(v)
        case .datetime(let v): return .datetime(v)
        case .choices(let v): return .choices(v)
        case .list(let items): return .count(items.count)
        default: return nil
        }
    }

    private static func boolean(_ value: ExpressionValue?) -> Bool? {
        if case .boolean(let v) = value { return v }
        return nil
    }

    /// A number as a decimal (the generated code widens an integer beside a decimal the same way).
    private static func exact(_ value: ExpressionValue?) -> ExactDecimal? {
        switch value {
        case .integer(let v): return Formula.exact(v)
        case .decimal(let v): return v
        default: return nil
        }
    }

    private func binary(
        _ op: SpecExpression.BinaryOperator, _ left: SpecExpression, _ right: SpecExpression, _ sub: (SpecExpression) -> ExpressionValue?
    ) -> ExpressionValue? {
        switch op {
        case .and:
            return Formula.and(Self.boolean(sub(left)), Self.boolean(sub(right))).map(ExpressionValue.boolean)
        case .or:
            return Formula.or(Self.boolean(sub(left)), Self.boolean(sub(right))).map(ExpressionValue.boolean)
        case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual:
            let comparison: Formula.Comparison =
                switch op {
                case .equal: .equal
                case .notEqual: .notEqual
                case .less: .less
                case .lessOrEqual: .lessOrEqual
                case .greater: .greater
                default: .greaterOrEqual
                }
            return Formula.holds(Self.compare(sub(left), sub(right)), comparison).map(ExpressionValue.boolean)
        case .plus, .minus, .times:
            return Self.arithmetic(op, sub(left), sub(right))
        case .divide:
            return Formula.divide(Self.exact(sub(left)), Self.exact(sub(right))).map(ExpressionValue.decimal)
        }
    }

    static func arithmetic(_ op: SpecExpression.BinaryOperator, _ a: ExpressionValue?, _ b: ExpressionValue?) -> ExpressionValue? {
        switch (a, b) {
        case (.integer(let x), .integer(let y)):
            let result = op == .plus ? Formula.add(x, y) : op == .minus ? Formula.subtract(x, y) : Formula.multiply(x, y)
            return result.map(ExpressionValue.integer)
        case (.money(let x), .money(let y)) where op != .times:
            return (op == .plus ? Formula.add(x, y) : Formula.subtract(x, y)).map(ExpressionValue.money)
        case (.money(let money), .integer(let n)) where op == .times, (.integer(let n), .money(let money)) where op == .times:
            return Formula.multiply(money, n).map(ExpressionValue.money)
        default:
            let (x, y) = (exact(a), exact(b))
            let result = op == .plus ? Formula.add(x, y) : op == .minus ? Formula.subtract(x, y) : Formula.multiply(x, y)
            return result.map(ExpressionValue.decimal)
        }
    }

    static func compare(_ a: ExpressionValue?, _ b: ExpressionValue?) -> ComparisonResult? {
        switch (a, b) {
        case (.integer(let x), .integer(let y)): return Formula.compare(x, y)
        case (.money(let x), .money(let y)): return Formula.compare(x, y)
        case (.text(let x), .text(let y)): return Formula.compare(x, y)
        case (.boolean(let x), .boolean(let y)): return Formula.compare(x, y)
        case (.date(let x), .date(let y)): return Formula.compare(x, y)
        case (.time(let x), .time(let y)): return Formula.compare(x, y)
        case (.datetime(let x), .datetime(let y)): return Formula.compare(x, y)
        default: return Formula.compare(exact(a), exact(b))
        }
    }

    private func call(
        _ function: SpecExpression.Function, _ arguments: [SpecExpression], _ node: SpecExpression, _ context: Context,
        _ sub: (SpecExpression) -> ExpressionValue?
    ) -> ExpressionValue? {
        switch function {
        case .today: return clock.today.map(ExpressionValue.date)
        case .now: return clock.now.map(ExpressionValue.datetime)
        case .length:
            if case .text(let text) = sub(arguments[0]) { return Formula.length(text).map(ExpressionValue.integer) }
            return nil
        case .selected:
            guard case .choices(let selected) = sub(arguments[0]) else { return nil }
            let value: String? = if case .text(let v) = sub(arguments[1]) { v } else { nil }
            return Formula.selected(selected, value).map(ExpressionValue.boolean)
        case .money:
            guard let constant = node.moneyConstant else { return nil }
            return .money(Money(minorUnits: constant.minorUnits, currency: constant.currency))
        case .if:
            guard let condition = Self.boolean(sub(arguments[0])) else { return nil }
            let chosen = sub(condition ? arguments[1] : arguments[2])
            // A branch of integers beside one of decimals is widened, as the generated code does.
            let other = condition ? arguments[2] : arguments[1]
            if case .integer = chosen, other.type == .decimal { return Self.exact(chosen).map(ExpressionValue.decimal) }
            return chosen
        case .count:
            if case .count(let n) = sub(arguments[0]) { return .integer(n) }
            return .integer(0)
        case .sum, .min, .max:
            // Over the items of the list the argument's columns name, in order; items where it is
            // unknown are left out; none left is unknown.
            guard let list = arguments[0].columnLists.first else { return nil }
            let items: [InterpretedObject] = if case .list(let items) = context.object.values[list] { items } else { [] }
            var itemContext = context
            let values = items.map { item -> ExpressionValue? in
                itemContext.item = (list, item)
                return evaluate(arguments[0], itemContext)
            }
            return Self.aggregate(function, values)
        }
    }

    /// `sum`, `min` or `max` of values of one type, through the `Formula` fold the generated code uses.
    static func aggregate(_ function: SpecExpression.Function, _ values: [ExpressionValue?]) -> ExpressionValue? {
        func unwrap<T>(_ pick: (ExpressionValue) -> T?) -> [T?] { values.map { $0.flatMap(pick) } }
        /// `min` or `max` of comparable values.
        func extreme<T: Comparable>(_ pick: (ExpressionValue) -> T?, _ wrap: (T) -> ExpressionValue) -> ExpressionValue? {
            let list = unwrap(pick)
            return (function == .min ? Formula.minimum(list) : Formula.maximum(list)).map(wrap)
        }
        switch values.first(where: { $0 != nil }) ?? nil {
        case .integer?:
            let pick = { (v: ExpressionValue) -> Int? in if case .integer(let n) = v { n } else { nil } }
            return function == .sum ? Formula.sum(unwrap(pick)).map(ExpressionValue.integer) : extreme(pick, ExpressionValue.integer)
        case .decimal?:
            let pick = { (v: ExpressionValue) -> ExactDecimal? in if case .decimal(let d) = v { d } else { nil } }
            return function == .sum ? Formula.sum(unwrap(pick)).map(ExpressionValue.decimal) : extreme(pick, ExpressionValue.decimal)
        case .money?:
            let amounts = unwrap { if case .money(let v) = $0 { v } else { nil } }
            let result = function == .sum ? Formula.sum(amounts) : function == .min ? Formula.minimum(amounts) : Formula.maximum(amounts)
            return result.map(ExpressionValue.money)
        case .date?: return extreme({ if case .date(let v) = $0 { v } else { nil } }, ExpressionValue.date)
        case .time?: return extreme({ if case .time(let v) = $0 { v } else { nil } }, ExpressionValue.time)
        case .datetime?: return extreme({ if case .datetime(let v) = $0 { v } else { nil } }, ExpressionValue.datetime)
        default:
            return nil
        }
    }
}
