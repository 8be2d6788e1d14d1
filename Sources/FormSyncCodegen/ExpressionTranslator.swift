import FormSpec

/// Turns a checked, typed expression into one Swift expression over the generated model: each
/// operation a call into `Formula` (FormSyncModel), which is what the interpreter evaluates with
/// too. The Swift value's type follows the node's type: `Int?`, `ExactDecimal?`, `Money?`,
/// `String?` (texts and choices), `Bool?`, `LocalDate?`, `LocalTime?`, `Timestamp?`, and
/// `[String]` for a multi-choice.
struct ExpressionTranslator {
    /// The Swift value of this level (`self`) and its fields.
    var here: String
    var fields: [FieldDefinition]
    /// The level above (`parent`), inside a list item.
    var parent: String?
    var parentFields: [FieldDefinition]?
    /// In a `choice_filter`: the variable holding the option.
    var option: String?
    /// Inside an aggregate: the list whose items `column` ranges over.
    var column: (list: String, variable: String, fields: [FieldDefinition])?
    var depth = 0

    /// The Swift type of a value of `type`.
    static func swiftType(_ type: ExpressionType?) -> String {
        switch type {
        case .integer?: return "Int?"
        case .decimal?: return "ExactDecimal?"
        case .money?: return "Money?"
        case .text?, .choice?: return "String?"
        case .boolean?: return "Bool?"
        case .date?: return "LocalDate?"
        case .time?: return "LocalTime?"
        case .datetime?: return "Timestamp?"
        case .multiChoice?: return "[String]"
        case .list?, .opaque?, nil: return "Never?"
        }
    }

    func swift(_ node: SpecExpression) -> String {
        switch node.kind {
        case .integer(let value): return "(\(value) as Int?)"
        case .decimal(let digits): return "Formula.literal(\(swiftLiteral(digits)))"
        case .text(let text): return "(\(swiftLiteral(text)) as String?)"
        case .boolean(let value): return "(\(value) as Bool?)"
        case .field(let path): return field(path)
        case .negate(let inner): return "Formula.negate(\(swift(inner)))"
        case .not(let inner): return "Formula.not(\(swift(inner)))"
        case .binary(let op, let a, let b): return binary(op, a, b)
        case .call(let function, let arguments): return call(function, arguments, node)
        }
    }

    /// `node` as a decimal when the other operand (or branch) makes the result one.
    func widened(_ node: SpecExpression, to type: ExpressionType?) -> String {
        node.type == .integer && type == .decimal ? "Formula.exact(\(swift(node)))" : swift(node)
    }

    private func value(_ field: FieldDefinition, on owner: String) -> String {
        let member = "\(owner).\(SwiftGenerator.name(field))"
        switch field.kind {
        case .decimal: return "Formula.exact(\(member))"
        case .choice: return "\(member)?.rawValue"
        case .multiChoice: return "\(member).map(\\.rawValue)"
        default: return member
        }
    }

    private func field(_ path: SpecExpression.FieldPath) -> String {
        if let option, path.up == 0, path.names.count == 2, path.names[0] == "option" {
            return "(\(option).\(Naming.escaped(Naming.lowerCamel(path.names[1]))) as String?)"
        }
        if path.names.count == 2, let column, column.list == path.names[0],
            let field = column.fields.first(where: { $0.name == path.names[1] })
        {
            return value(field, on: column.variable)
        }
        let (owner, level) = path.up == 1 ? (parent ?? "parent", parentFields ?? []) : (here, fields)
        guard let field = level.first(where: { $0.name == path.names[0] }) else { return "nil" }
        return value(field, on: owner)
    }

    private func binary(_ op: SpecExpression.BinaryOperator, _ a: SpecExpression, _ b: SpecExpression) -> String {
        let decimal = a.type == .decimal || b.type == .decimal
        let (x, y) = decimal ? (widened(a, to: .decimal), widened(b, to: .decimal)) : (swift(a), swift(b))
        switch op {
        case .and: return "Formula.and(\(x), \(y))"
        case .or: return "Formula.or(\(x), \(y))"
        case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual:
            return "Formula.holds(Formula.compare(\(x), \(y)), .\(Self.comparison(op)))"
        case .plus: return "Formula.add(\(x), \(y))"
        case .minus: return "Formula.subtract(\(x), \(y))"
        case .times:
            if b.type?.isMoney == true && a.type == .integer { return "Formula.multiply(\(y), \(x))" }
            return "Formula.multiply(\(x), \(y))"
        case .divide:
            return "Formula.divide(\(widened(a, to: .decimal)), \(widened(b, to: .decimal)))"
        }
    }

    static func comparison(_ op: SpecExpression.BinaryOperator) -> String {
        switch op {
        case .equal: return "equal"
        case .notEqual: return "notEqual"
        case .less: return "less"
        case .lessOrEqual: return "lessOrEqual"
        case .greater: return "greater"
        default: return "greaterOrEqual"
        }
    }

    private func call(_ function: SpecExpression.Function, _ arguments: [SpecExpression], _ node: SpecExpression) -> String {
        switch function {
        case .today: return "FormClock.current.today"
        case .now: return "FormClock.current.now"
        case .length: return "Formula.length(\(swift(arguments[0])))"
        case .selected: return "Formula.selected(\(swift(arguments[0])), \(swift(arguments[1])))"
        case .money:
            guard let constant = node.moneyConstant else { return "(nil as Money?)" }
            return "(Money(minorUnits: \(constant.minorUnits), currency: \(swiftLiteral(constant.currency))) as Money?)"
        case .if:
            return
                "Formula.choose(\(swift(arguments[0])), \(widened(arguments[1], to: node.type)), \(widened(arguments[2], to: node.type)))"
        case .count:
            guard case .field(let path) = arguments[0].kind, let field = fields.first(where: { $0.name == path.names[0] }) else {
                return "(0 as Int?)"
            }
            return "(\(here).\(SwiftGenerator.name(field)).count as Int?)"
        case .sum, .min, .max:
            guard let list = arguments[0].columnLists.first, let field = fields.first(where: { $0.name == list }),
                case .list(let items) = field.kind
            else { return "nil" }
            var inner = self
            inner.depth += 1
            let variable = "item\(depth)"
            inner.column = (list, variable, items.fields)
            let name = function == .sum ? "sum" : function == .min ? "minimum" : "maximum"
            let type = Self.swiftType(arguments[0].type)
            return
                "Formula.\(name)(\(here).\(SwiftGenerator.name(field)).map { \(variable) -> \(type) in \(inner.swift(arguments[0])) })"
        }
    }
}
