import FormSpec
import FormSyncCodegen

/// Turns a checked, typed expression into one script expression over the preview page's values,
/// each operation a call into the page's library (`PreviewRuntime`), as `ExpressionTranslator`
/// does for Swift. Values: integers are BigInt, decimals `{s, e}` (from the field's text), money
/// `{minor_units, currency}`, texts, choices, dates and times strings, a multi-choice an array.
struct PreviewExpressionTranslator {
    var fields: [FieldDefinition]
    var parentFields: [FieldDefinition]?
    /// In a `choice_filter`: the option is `o`.
    var filtering = false
    /// Inside an aggregate: the list whose item `column` names.
    var column: (list: String, variable: String, fields: [FieldDefinition])?
    var depth = 0

    func script(_ node: SpecExpression) -> String {
        switch node.kind {
        case .integer(let value): return "\(value)n"
        case .decimal(let digits): return "FS.lit(\(jsonString(digits)))"
        case .text(let text): return jsonString(text)
        case .boolean(let value): return value ? "true" : "false"
        case .field(let path): return field(path)
        case .negate(let inner):
            switch inner.type {
            case .integer?: return "FS.negInt(\(script(inner)))"
            case .decimal?: return "FS.negDec(\(script(inner)))"
            default: return "FS.negMoney(\(script(inner)))"
            }
        case .not(let inner): return "FS.not(\(script(inner)))"
        case .binary(let op, let a, let b): return binary(op, a, b)
        case .call(let function, let arguments): return call(function, arguments, node)
        }
    }

    func widened(_ node: SpecExpression, to type: ExpressionType?) -> String {
        node.type == .integer && type == .decimal ? "FS.decOfInt(\(script(node)))" : script(node)
    }

    private func value(_ field: FieldDefinition, on owner: String) -> String {
        let member = "\(owner)[\(jsonString(field.name))]"
        switch field.kind {
        case .decimal: return "FS.decOf(\(member))"
        case .multiChoice: return "(\(member) ?? [])"
        case .list: return "(\(member) ?? [])"
        default: return "(\(member) ?? null)"
        }
    }

    private func field(_ path: SpecExpression.FieldPath) -> String {
        if filtering, path.up == 0, path.names.count == 2, path.names[0] == "option" {
            return "(o.columns[\(jsonString(path.names[1]))] ?? null)"
        }
        if path.names.count == 2, let column, column.list == path.names[0],
            let field = column.fields.first(where: { $0.name == path.names[1] })
        {
            return value(field, on: column.variable)
        }
        let (owner, level) = path.up == 1 ? ("p", parentFields ?? []) : ("h", fields)
        guard let field = level.first(where: { $0.name == path.names[0] }) else { return "null" }
        return value(field, on: owner)
    }

    static func comparator(_ type: ExpressionType?) -> String {
        switch type {
        case .integer?: return "FS.cmpOrd"
        case .decimal?: return "FS.cmpDec"
        case .money?: return "FS.cmpMoney"
        case .text?, .choice?: return "FS.cmpText"
        case .boolean?: return "FS.cmpBool"
        case .date?: return "FS.cmpDate"
        case .time?: return "FS.cmpTime"
        default: return "FS.cmpMoment"
        }
    }

    private func binary(_ op: SpecExpression.BinaryOperator, _ a: SpecExpression, _ b: SpecExpression) -> String {
        let decimal = a.type == .decimal || b.type == .decimal
        let (x, y) = decimal ? (widened(a, to: .decimal), widened(b, to: .decimal)) : (script(a), script(b))
        let kind = decimal ? "Dec" : a.type?.isMoney == true || b.type?.isMoney == true ? "Money" : "Int"
        switch op {
        case .and: return "FS.and(\(x), () => \(y))"
        case .or: return "FS.or(\(x), () => \(y))"
        case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual:
            let comparator = decimal ? "FS.cmpDec" : Self.comparator(a.type)
            return "FS.holds(\(comparator)(\(x), \(y)), \(jsonString(op.rawValue)))"
        case .plus: return "FS.add\(kind)(\(x), \(y))"
        case .minus: return "FS.sub\(kind)(\(x), \(y))"
        case .times:
            if kind == "Money" { return a.type?.isMoney == true ? "FS.mulMoney(\(x), \(y))" : "FS.mulMoney(\(y), \(x))" }
            return "FS.mul\(kind)(\(x), \(y))"
        case .divide:
            return "FS.divDec(\(widened(a, to: .decimal)), \(widened(b, to: .decimal)))"
        }
    }

    private func call(_ function: SpecExpression.Function, _ arguments: [SpecExpression], _ node: SpecExpression) -> String {
        switch function {
        case .today: return "FS.today()"
        case .now: return "FS.now()"
        case .length: return "FS.length(\(script(arguments[0])))"
        case .selected: return "FS.selected(\(script(arguments[0])), \(script(arguments[1])))"
        case .money:
            guard let constant = node.moneyConstant else { return "null" }
            // In parentheses: as an arrow function's body, braces alone would open a block.
            return "({ minor_units: \(constant.minorUnits)n, currency: \(jsonString(constant.currency)) })"
        case .if:
            return
                "FS.choose(\(script(arguments[0])), () => \(widened(arguments[1], to: node.type)), () => \(widened(arguments[2], to: node.type)))"
        case .count:
            guard case .field(let path) = arguments[0].kind else { return "0n" }
            let owner = path.up == 1 ? "p" : "h"
            return "BigInt((\(owner)[\(jsonString(path.names[0]))] ?? []).length)"
        case .sum, .min, .max:
            guard let list = arguments[0].columnLists.first, let field = fields.first(where: { $0.name == list }),
                case .list(let items) = field.kind
            else { return "null" }
            var inner = self
            inner.depth += 1
            let variable = "it\(depth)"
            inner.column = (list, variable, items.fields)
            let values = "(h[\(jsonString(list))] ?? []).map((\(variable)) => \(inner.script(arguments[0])))"
            let type = arguments[0].type
            switch function {
            case .sum:
                let kind = type == .integer ? "Int" : type == .decimal ? "Dec" : "Money"
                return "FS.sum\(kind)(\(values))"
            default:
                return "FS.\(function == .min ? "minOf" : "maxOf")(\(values), \(Self.comparator(type)))"
            }
        }
    }
}

/// A script string literal: JSON's (which a script reads the same), with `<` and the two line
/// separators JSON allows raw escaped too, so a spec's text cannot close the page's script.
func jsonString(_ text: String) -> String {
    JSONValue.quoted(text).replacingOccurrences(of: "<", with: "\\u003c").replacingOccurrences(of: "\u{2028}", with: "\\u2028")
        .replacingOccurrences(of: "\u{2029}", with: "\\u2029")
}
