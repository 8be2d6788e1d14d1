import FormSpec
@_spi(Generated) import FormSyncModel
import Foundation

/// What the generated code does with a spec's expressions, on interpreted payloads: the rules
/// they add to validation, in the generated order, and `recalculated()`.
extension SpecInterpreter {
    /// Whether a field holds something: the generated `x != nil`, or `!x.isEmpty` for a list.
    static func holdsValue(_ value: InterpretedValue?) -> Bool {
        switch value {
        case nil: return false
        case .choices(let list)?: return !list.isEmpty
        case .files(let list)?: return !list.isEmpty
        case .list(let list)?: return !list.isEmpty
        default: return true
        }
    }

    /// The constraint, calculation and choice-filter rules of `field`, after its own.
    static func expressionRules(
        _ field: FieldDefinition, _ value: InterpretedValue?, object: InterpretedObject, parent: InterpretedObject?,
        evaluator: ExpressionEvaluator, at p: String, into validator: inout FieldValidator
    ) {
        if let constraint = field.constraint {
            validator.constraint(
                evaluator.holds(constraint.expression, in: object, parent: parent), holdsValue: holdsValue(value),
                message: field.constraintMessage ?? "Must satisfy: \(constraint.text).", at: p)
        }
        if let calculate = field.calculate {
            let expected = stored(evaluator.value(of: calculate.expression, in: object, parent: parent), as: field.kind)
            compareCalculated(value, expected, at: p, into: &validator)
        }
        if let filter = field.choiceFilter {
            let set: ChoiceSet? =
                switch field.kind {
                case .choice(let set), .multiChoice(let set, _): set
                default: nil
                }
            guard let set else { return }
            func offered(_ chosen: String) -> Bool? {
                guard let option = set.options.first(where: { $0.value == chosen }) else { return nil }
                let context = ExpressionEvaluator.Context(object: object, parent: parent, option: (option, set.columns))
                return evaluator.holds(filter.expression, in: context)
            }
            switch value {
            case .choice(let chosen)?: validator.offered(offered(chosen), value: chosen, at: p)
            case .choices(let list)?:
                for (index, chosen) in list.enumerated() {
                    validator.offered(offered(chosen), value: chosen, at: JSONPointer.appending(p, index))
                }
            default: break
            }
        }
    }

    /// The generated `validator.calculated(x, calculated_x())`, with the same Swift types.
    private static func compareCalculated(
        _ value: InterpretedValue?, _ expected: InterpretedValue?, at p: String, into validator: inout FieldValidator
    ) {
        func check<T: Equatable>(_ pick: (InterpretedValue) -> T?) {
            validator.calculated(value.flatMap(pick), expected.flatMap(pick), at: p)
        }
        switch value ?? expected {
        case .integer?: check { if case .integer(let v) = $0 { v } else { nil } }
        case .decimal?: check { if case .decimal(let v) = $0 { v } else { nil } }
        case .money?: check { if case .money(let v) = $0 { v } else { nil } }
        case .text?: check { if case .text(let v) = $0 { v } else { nil } }
        case .boolean?: check { if case .boolean(let v) = $0 { v } else { nil } }
        case .date?: check { if case .date(let v) = $0 { v } else { nil } }
        case .time?: check { if case .time(let v) = $0 { v } else { nil } }
        case .datetime?: check { if case .datetime(let v) = $0 { v } else { nil } }
        default: break
        }
    }

    /// A calculation's value as a field of `kind` stores it.
    static func stored(_ value: ExpressionValue?, as kind: FieldKind) -> InterpretedValue? {
        switch (kind, value) {
        case (.integer, .integer(let v)?): return .integer(v)
        case (.decimal, .integer(let v)?): return Formula.decimal(Formula.exact(v)).map(InterpretedValue.decimal)
        case (.decimal, .decimal(let v)?): return Formula.decimal(v).map(InterpretedValue.decimal)
        case (.money, .money(let v)?): return .money(v)
        case (.text, .text(let v)?): return .text(v)
        case (.boolean, .boolean(let v)?): return .boolean(v)
        case (.date, .date(let v)?): return .date(v)
        case (.time, .time(let v)?): return .time(v)
        case (.datetime, .datetime(let v)?): return .datetime(v)
        default: return nil
        }
    }

    /// The generated `recalculated()`: each settle step in the form's order, on every item it names.
    static func recalculated(_ object: InterpretedObject, steps: [SettleStep]) -> InterpretedObject {
        let evaluator = ExpressionEvaluator()
        var copy = object
        for step in steps { settle(step, lists: step.lists[...], in: &copy, parent: nil, evaluator: evaluator) }
        return copy
    }

    private static func settle(
        _ step: SettleStep, lists: ArraySlice<String>, in object: inout InterpretedObject, parent: InterpretedObject?,
        evaluator: ExpressionEvaluator
    ) {
        if let list = lists.first {
            guard case .list(var items)? = object.values[list] else { return }
            let level = object
            for index in items.indices {
                settle(step, lists: lists.dropFirst(), in: &items[index], parent: level, evaluator: evaluator)
            }
            object.values[list] = .list(items)
            return
        }
        guard let field = object.fields.first(where: { $0.name == step.field }) else { return }
        if let relevant = field.relevant, evaluator.holds(relevant.expression, in: object, parent: parent) != true {
            object.values[field.name] = empty(field)
            return
        }
        if let calculate = field.calculate {
            object.values[field.name] = stored(evaluator.value(of: calculate.expression, in: object, parent: parent), as: field.kind)
        }
    }

    /// A field with nothing in it: nil, or an empty list for one that holds several values.
    static func empty(_ field: FieldDefinition) -> InterpretedValue? {
        switch field.kind {
        case .multiChoice: return .choices([])
        case .list: return .list([])
        case .file(_, let rule) where rule.multiple: return .files([])
        default: return nil
        }
    }
}

extension SpecInterpreter {
    /// A payload of `form` as its generated `recalculated()` returns it (JSON in, JSON out).
    public static func recalculated(_ json: Data, for form: FormDefinition) throws -> Data {
        try recalculated(try InterpretedObject.decode(json, fields: form.fields), steps: form.settleSteps).encoded()
    }
}
