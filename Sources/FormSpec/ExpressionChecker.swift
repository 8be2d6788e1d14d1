/// The fields an expression can see: its own level's, then each level above (`../`).
struct ExpressionScope {
    var fields: [FieldDefinition]
    var parent: [FieldDefinition]?
    /// In a `choice_filter`: the columns of the option being filtered (`option.region`).
    var optionColumns: [String]? = nil

    func level(_ up: Int) -> [FieldDefinition]? {
        switch up {
        case 0: return fields
        case 1: return parent
        default: return nil
        }
    }
}

/// Types an expression against the fields it names. Problems are collected with their offsets;
/// the expression's type is nil when it has none (a problem was reported).
struct ExpressionChecker {
    let scope: ExpressionScope
    private(set) var problems: [(offset: Int, message: String)] = []

    init(scope: ExpressionScope) {
        self.scope = scope
    }

    private mutating func problem(_ node: SpecExpression, _ message: String) -> ExpressionType? {
        problems.append((node.offset, message))
        return nil
    }

    /// The type of `node`; inside an aggregate, `column` is the list whose items it ranges over.
    mutating func type(of node: SpecExpression, column list: ListDefinition? = nil) -> ExpressionType? {
        switch node.kind {
        case .integer: return .integer
        case .decimal: return .decimal
        case .text: return .text
        case .boolean: return .boolean
        case .field(let path): return field(path, node, column: list)
        case .negate(let inner):
            guard let type = type(of: inner, column: list) else { return nil }
            guard type.isNumber || type.isMoney else { return problem(node, "'-' takes a number or money, not \(type)") }
            return type
        case .not(let inner):
            guard let type = type(of: inner, column: list) else { return nil }
            guard type == .boolean else { return problem(node, "'not' takes a boolean, not \(type)") }
            return .boolean
        case .binary(let op, let left, let right):
            return binary(op, left, right, node, column: list)
        case .call(let function, let arguments):
            return call(function, arguments, node, column: list)
        }
    }

    private mutating func field(_ path: SpecExpression.FieldPath, _ node: SpecExpression, column list: ListDefinition?) -> ExpressionType? {
        if let columns = scope.optionColumns, path.up == 0, path.names.count == 2, path.names[0] == "option" {
            guard columns.contains(path.names[1]) else {
                return problem(
                    node,
                    columns.isEmpty
                        ? "the options have no columns: give each option its columns, such as { value: harbour, region: north }"
                        : "the options have no column '\(path.names[1])'\(SpecChecker.suggestion(path.names[1], columns, orList: true))")
            }
            return .text
        }
        guard let fields = scope.level(path.up) else {
            return problem(node, path.up == 1 ? "'../' reaches above the form" : "'../' reaches more than one level up")
        }
        let first = path.names[0]
        guard let field = fields.first(where: { $0.name == first }) else {
            let names = fields.map(\.name)
            return problem(node, "no field '\(first)' here\(SpecChecker.suggestion(first, names, orList: true))")
        }
        guard path.names.count > 1 else { return ExpressionType(field.kind) }
        guard case .list(let items) = field.kind else {
            return problem(node, "'\(first)' is \(ExpressionType(field.kind)), not a list: '\(path)' names nothing")
        }
        guard path.names.count == 2 else { return problem(node, "'\(path)' goes into a list inside a list; name one level at a time") }
        guard let column = items.fields.first(where: { $0.name == path.names[1] }) else {
            let names = items.fields.map(\.name)
            return problem(
                node, "the list '\(first)' has no field '\(path.names[1])'\(SpecChecker.suggestion(path.names[1], names, orList: true))")
        }
        guard let list, list == items else {
            return problem(node, "'\(path)' is a column of the list '\(first)': use it inside count, sum, min or max")
        }
        return ExpressionType(column.kind)
    }

    /// `read_kind = estimated`: a choice compared with one of its options written as a bare
    /// name, which reads as a field that does not exist. The problem says to quote the option.
    private func unquotedOption(
        _ choice: SpecExpression, _ other: SpecExpression, _ op: SpecExpression.BinaryOperator
    ) -> (node: SpecExpression, message: String)? {
        guard case .field(let path) = choice.kind, case .field(let bare) = other.kind, bare.up == 0, bare.names.count == 1,
            path.names.count == 1, let fields = scope.level(path.up), let levelHere = scope.level(0),
            !levelHere.contains(where: { $0.name == bare.names[0] }),
            let field = fields.first(where: { $0.name == path.names[0] }), case .choice(let set) = ExpressionType(field.kind),
            set.options.contains(where: { $0.value == bare.names[0] })
        else { return nil }
        let option = bare.names[0]
        return (
            other,
            "no field '\(option)' here: '\(option)' is an option of \(path); to compare with it, quote it: \(path) \(op.rawValue) '\(option)'"
        )
    }

    private mutating func binary(
        _ op: SpecExpression.BinaryOperator, _ left: SpecExpression, _ right: SpecExpression, _ node: SpecExpression,
        column list: ListDefinition?
    ) -> ExpressionType? {
        if op == .equal || op == .notEqual, let hint = unquotedOption(left, right, op) ?? unquotedOption(right, left, op) {
            return problem(hint.node, hint.message)
        }
        let a = type(of: left, column: list)
        let b = type(of: right, column: list)
        guard let a, let b else { return nil }
        switch op {
        case .and, .or:
            guard a == .boolean, b == .boolean else { return problem(node, "'\(op.rawValue)' joins booleans, not \(a) and \(b)") }
            return .boolean
        case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual:
            return comparison(op, a, b, left, right, node)
        case .plus, .minus:
            if a.isNumber && b.isNumber { return a == .integer && b == .integer ? .integer : .decimal }
            if case .money(let x) = a, case .money(let y) = b {
                if let x, let y, x != y { return problem(node, "money in \(x) and money in \(y) do not add up") }
                return .money(currency: x ?? y)
            }
            if a.isMoney || b.isMoney {
                return problem(
                    node, "money and \(a.isMoney ? b : a) do not add up: write money on both sides (a bare number has no currency)")
            }
            return problem(node, "'\(op.rawValue)' takes numbers or money, not \(a) and \(b)")
        case .times:
            if a.isNumber && b.isNumber { return a == .integer && b == .integer ? .integer : .decimal }
            if a.isMoney && b == .integer { return a }
            if b.isMoney && a == .integer { return b }
            if a.isMoney || b.isMoney {
                return problem(node, "money times \(a.isMoney ? b : a) is not exact: multiply money by an integer (a quantity)")
            }
            return problem(node, "'*' takes numbers, not \(a) and \(b)")
        case .divide:
            if a.isNumber && b.isNumber { return .decimal }
            if a.isMoney || b.isMoney {
                return problem(node, "money does not divide exactly: calculate in minor units, or leave it to the server")
            }
            return problem(node, "'div' takes numbers, not \(a) and \(b)")
        }
    }

    private mutating func comparison(
        _ op: SpecExpression.BinaryOperator, _ a: ExpressionType, _ b: ExpressionType, _ left: SpecExpression, _ right: SpecExpression,
        _ node: SpecExpression
    ) -> ExpressionType? {
        let ordered = op != .equal && op != .notEqual
        switch (a, b) {
        case _ where a.isNumber && b.isNumber: return .boolean
        case (.money(let x), .money(let y)):
            if let x, let y, x != y { return problem(node, "money in \(x) and money in \(y) cannot be compared") }
            return .boolean
        case (.text, .text), (.date, .date), (.time, .time), (.datetime, .datetime), (.boolean, .boolean):
            if ordered && a == .boolean { return problem(node, "booleans are equal or not; '\(op.rawValue)' does not order them") }
            return .boolean
        case (.choice(let set), .text):
            return option(set, right, ordered: ordered, op)
        case (.text, .choice(let set)):
            return option(set, left, ordered: ordered, op)
        case (.choice(let x), .choice(let y)) where x == y && !ordered:
            return .boolean
        default:
            if a.isMoney || b.isMoney {
                return problem(node, "money compares with money, not with \(a.isMoney ? b : a) (a bare number has no currency)")
            }
            return problem(node, "\(a) and \(b) cannot be compared")
        }
    }

    /// A choice compared with a text: equal or not only, and the text must be one of its options.
    private mutating func option(
        _ set: ChoiceSet, _ text: SpecExpression, ordered: Bool, _ op: SpecExpression.BinaryOperator
    ) -> ExpressionType? {
        if ordered { return problem(text, "a choice is equal to an option or not; '\(op.rawValue)' does not order options") }
        if case .text(let value) = text.kind, !set.options.contains(where: { $0.value == value }) {
            let values = set.options.map(\.value)
            return problem(
                text,
                "'\(value)' is not an option of \(set.specName)\(SpecChecker.suggestion(value, values, orList: true)); the comparison could never hold"
            )
        }
        return .boolean
    }

    private mutating func call(
        _ function: SpecExpression.Function, _ arguments: [SpecExpression], _ node: SpecExpression, column list: ListDefinition?
    ) -> ExpressionType? {
        func arity(_ n: Int) -> Bool {
            guard arguments.count == n else {
                problems.append((node.offset, "\(function.rawValue)() takes \(n) argument\(n == 1 ? "" : "s"), not \(arguments.count)"))
                return false
            }
            return true
        }
        switch function {
        case .today:
            return arity(0) ? .date : nil
        case .now:
            return arity(0) ? .datetime : nil
        case .length:
            guard arity(1), let type = type(of: arguments[0], column: list) else { return nil }
            return type == .text ? .integer : problem(arguments[0], "length() takes a text, not \(type)")
        case .selected:
            guard arity(2), let field = type(of: arguments[0], column: list) else { return nil }
            guard case .multiChoice(let set) = field else {
                return problem(arguments[0], "selected() takes a multi-choice field first, not \(field)")
            }
            guard type(of: arguments[1], column: list) == .text else {
                return problem(arguments[1], "selected() takes an option's text second")
            }
            return option(set, arguments[1], ordered: false, .equal)
        case .if:
            guard arity(3), let condition = type(of: arguments[0], column: list) else { return nil }
            guard condition == .boolean else { return problem(arguments[0], "if() takes a boolean first, not \(condition)") }
            guard let a = type(of: arguments[1], column: list), let b = type(of: arguments[2], column: list) else { return nil }
            if a == b { return a }
            if a.isNumber && b.isNumber { return .decimal }
            if case .money(let x) = a, case .money(let y) = b, x == nil || y == nil || x == y { return .money(currency: x ?? y) }
            return problem(node, "if() gives \(a) or \(b): both branches must be of one type")
        case .money:
            guard arity(2) else { return nil }
            guard let amount = SpecExpression.numberText(arguments[0]) else {
                return problem(arguments[0], "money() takes a number written out first, such as money(12.50, 'EUR')")
            }
            guard case .text(let code) = arguments[1].kind else {
                return problem(arguments[1], "money() takes a currency's code in quotes second, such as money(12.50, 'EUR')")
            }
            guard let digits = CurrencyTable.minorDigits(code) else {
                return problem(
                    arguments[1],
                    "'\(code)' is not a currency of ISO 4217\(SpecChecker.suggestion(code, CurrencyTable.all.map(\.code), orList: false))")
            }
            guard CurrencyTable.minorUnits(amount, digits: digits) != nil else {
                let fraction = amount.split(separator: ".").dropFirst().first?.count ?? 0
                return problem(
                    arguments[0],
                    fraction > digits
                        ? "\(code) has \(digits) decimal place\(digits == 1 ? "" : "s"); \(amount) has \(fraction)"
                        : "\(amount) \(code) is more than money holds (minor units are a 64-bit integer)")
            }
            return .money(currency: code)
        case .count:
            guard arity(1) else { return nil }
            guard case .field(let path) = arguments[0].kind, path.names.count == 1, let type = type(of: arguments[0], column: list),
                case .list = type
            else { return problem(arguments[0], "count() takes a list field, such as count(lines)") }
            return .integer
        case .sum, .min, .max:
            guard arity(1) else { return nil }
            guard let items = aggregated(arguments[0]) else {
                return problem(arguments[0], "\(function.rawValue)() takes a list's column, such as \(function.rawValue)(lines.quantity)")
            }
            guard let type = type(of: arguments[0], column: items) else { return nil }
            guard type.isNumber || type.isMoney || (function != .sum && [.date, .time, .datetime].contains(type)) else {
                return problem(arguments[0], "\(function.rawValue)() takes numbers or money, not \(type)")
            }
            return type
        }
    }

    /// `node` with the type of each of its nodes set; call it on an expression `type(of:)` accepted.
    func annotated(_ node: SpecExpression, column list: ListDefinition? = nil) -> SpecExpression {
        var scratch = self
        var copy = node
        copy.type = scratch.type(of: node, column: list)
        switch node.kind {
        case .negate(let inner): copy.kind = .negate(annotated(inner, column: list))
        case .not(let inner): copy.kind = .not(annotated(inner, column: list))
        case .binary(let op, let a, let b): copy.kind = .binary(op, annotated(a, column: list), annotated(b, column: list))
        case .call(let function, let arguments):
            let inner = [.sum, .min, .max].contains(function) ? arguments.first.flatMap(aggregated) ?? list : list
            copy.kind = .call(function, arguments.map { annotated($0, column: inner) })
        default: break
        }
        return copy
    }

    /// The one list whose columns `node` names (`lines.quantity * lines.unit_price`), or nil.
    private func aggregated(_ node: SpecExpression) -> ListDefinition? {
        let lists = node.columnLists
        guard let name = lists.first, lists.allSatisfy({ $0 == name }),
            let field = scope.fields.first(where: { $0.name == name }), case .list(let items) = field.kind
        else { return nil }
        return items
    }
}
