import Foundation

/// Checking expressions (`relevant:`, `constraint:`, `calculate:`, `choice_filter:`) once every
/// field of the form is known: each is parsed, typed against the fields it names, and the fields
/// that `recalculated()` settles are put in an order, or the circle among them reported.
extension SpecChecker {
    static let expressionKeys = ["relevant", "constraint", "constraint_message", "calculate", "choice_filter"]

    /// The types a `calculate:` may fill.
    static let calculableTypes = ["text", "integer", "decimal", "boolean", "money", "date", "time", "datetime"]

    /// Types, checks and stores the expressions of `fields` and of every list below them.
    mutating func checkExpressions(_ fields: inout [FieldDefinition], parent: [FieldDefinition]?, prefix: String) {
        for index in fields.indices {
            let field = fields[index]
            let display = prefix + field.name
            if let keys = pendingExpressions.removeValue(forKey: display) {
                let scope = ExpressionScope(fields: fields, parent: parent)
                fields[index] = checkExpressions(of: field, keys: keys, scope: scope, display: display)
            }
            if case .list(var list) = fields[index].kind {
                checkExpressions(&list.fields, parent: fields, prefix: display + ".")
                fields[index].kind = .list(list)
            }
        }
    }

    private mutating func checkExpressions(
        of field: FieldDefinition, keys: [String: Pair], scope: ExpressionScope, display: String
    ) -> FieldDefinition {
        var field = field
        if let pair = keys["relevant"], let checked = expression(pair.value, scope: scope, key: "relevant") {
            if checked.expression.type != .boolean {
                error(checked.location, "relevant must be true or false, not \(describe(checked.expression.type))")
            } else if checked.expression.readsClock {
                error(
                    checked.location,
                    "relevant may not read today() or now(): the server, which checks relevance too, cannot know the device's day; use a constraint"
                )
            } else {
                field.relevant = checked
            }
        }
        if let pair = keys["constraint"], let checked = expression(pair.value, scope: scope, key: "constraint") {
            if checked.expression.type != .boolean {
                error(checked.location, "constraint must be true or false, not \(describe(checked.expression.type))")
            } else if let reason = neverHolds(checked.expression, field: field, scope: scope) {
                error(checked.location, "this constraint can never hold: \(reason)")
            } else {
                field.constraint = checked
            }
        }
        if let pair = keys["constraint_message"] {
            if keys["constraint"] == nil {
                error(pair.key.location, "constraint_message needs a constraint on field '\(display)'")
            } else {
                field.constraintMessage = text(pair.value, "constraint_message")
            }
        }
        if let pair = keys["calculate"] {
            if !Self.calculableTypes.contains(field.kind.typeName) {
                error(
                    pair.key.location,
                    "calculate fills a \(Self.calculableTypes.dropLast().joined(separator: ", ")) or \(Self.calculableTypes.last!) field; '\(display)' is \(article(field.kind.typeName)) \(field.kind.typeName) field"
                )
            } else if field.required {
                error(pair.key.location, "a calculated field is filled by its calculation; 'required' does not apply to '\(display)'")
            } else if let checked = expression(pair.value, scope: scope, key: "calculate") {
                if checked.expression.readsClock {
                    error(
                        checked.location,
                        "a calculation may not read today() or now(): the server recalculates it and would find another value")
                } else if let problem = assignable(checked.expression.type, to: field.kind) {
                    error(checked.location, "'\(display)' is \(article(field.kind.typeName)) \(field.kind.typeName) field; \(problem)")
                } else {
                    field.calculate = checked
                }
            }
        }
        if let pair = keys["choice_filter"] {
            let set: ChoiceSet? =
                switch field.kind {
                case .choice(let set), .multiChoice(let set, _): set
                default: nil
                }
            if let set {
                var filterScope = scope
                filterScope.optionColumns = set.columns
                if let checked = expression(pair.value, scope: filterScope, key: "choice_filter") {
                    if checked.expression.type != .boolean {
                        error(checked.location, "choice_filter must be true or false, not \(describe(checked.expression.type))")
                    } else if !checked.expression.fieldPaths.contains(where: {
                        $0.up == 0 && $0.names.first == "option" && $0.names.count == 2
                    }) {
                        error(
                            checked.location,
                            "choice_filter must read a column of the option, such as option.region = region: without one it offers every option or none"
                        )
                    } else {
                        field.choiceFilter = checked
                    }
                }
            }
        }
        return field
    }

    private func describe(_ type: ExpressionType?) -> String { type.map(\.description) ?? "unknown" }

    /// Parses and types one expression; nil (with its diagnostics) when it is wrong.
    private mutating func expression(_ node: YAMLNode, scope: ExpressionScope, key: String) -> FieldExpression? {
        if case .invalid = node.kind { return nil }
        guard case .scalar(let text, _) = node.kind else {
            error(node.location, "\(key) must be an expression (a text), found \(node.kindName)")
            return nil
        }
        switch ExpressionParser.parse(text) {
        case .failure(let failure):
            error(expressionLocation(node, text, offset: failure.offset), failure.message)
            return nil
        case .success(let parsed):
            var checker = ExpressionChecker(scope: scope)
            let type = checker.type(of: parsed)
            for problem in checker.problems {
                error(expressionLocation(node, text, offset: problem.offset), problem.message)
            }
            guard type != nil, checker.problems.isEmpty else { return nil }
            return FieldExpression(text: text, expression: checker.annotated(parsed), location: node.location)
        }
    }

    /// Why a value of `type` cannot fill a field of `kind`, or nil when it can.
    private func assignable(_ type: ExpressionType?, to kind: FieldKind) -> String? {
        guard let type else { return "the calculation has no type" }
        let fits: Bool
        switch (kind, type) {
        case (.integer, .integer), (.decimal, .integer), (.decimal, .decimal), (.text, .text), (.boolean, .boolean),
            (.date, .date), (.time, .time), (.datetime, .datetime):
            fits = true
        case (.money(_, _, let fieldCurrency), .money(let currency)):
            if let fieldCurrency, let currency, fieldCurrency != currency {
                return "the calculation gives money in \(currency), not in \(fieldCurrency)"
            }
            fits = true
        default:
            fits = false
        }
        return fits ? nil : "the calculation gives \(type)"
    }

    // MARK: Constraints that cannot hold

    /// Why `expression` (a constraint on `field`) is false for every value, or nil: a literal
    /// false, or bounds on one field (its own min/max included) that leave no number between them.
    private func neverHolds(_ expression: SpecExpression, field: FieldDefinition, scope: ExpressionScope) -> String? {
        if case .boolean(false) = expression.kind { return "it is false" }
        var conjuncts: [SpecExpression] = []
        var stack = [expression]
        while let node = stack.popLast() {
            if case .binary(.and, let a, let b) = node.kind {
                stack.append(b)
                stack.append(a)
            } else {
                conjuncts.append(node)
            }
        }
        var bounds: [String: NumberRange] = [:]
        if let own = NumberRange(field.kind) { bounds[field.name] = own }
        for conjunct in conjuncts {
            if case .boolean(false) = conjunct.kind { return "one of its parts is false" }
            guard case .binary(let op, let a, let b) = conjunct.kind else { continue }
            var name: String?
            var number: Decimal?
            var flipped = false
            if case .field(let path) = a.kind, path.up == 0, path.names.count == 1, let n = Self.number(b) {
                (name, number) = (path.names[0], n)
            } else if case .field(let path) = b.kind, path.up == 0, path.names.count == 1, let n = Self.number(a) {
                (name, number, flipped) = (path.names[0], n, true)
            }
            guard let name, let number else { continue }
            if bounds[name] == nil {
                bounds[name] = scope.fields.first(where: { $0.name == name }).flatMap { NumberRange($0.kind) } ?? NumberRange()
            }
            bounds[name]!.narrow(op, number, flipped: flipped)
            if bounds[name]!.isEmpty {
                return "no value of '\(name)' meets every bound\(bounds[name]!.owned ? " (its own min and max included)" : "")"
            }
        }
        return nil
    }

    private static func number(_ node: SpecExpression) -> Decimal? {
        switch node.kind {
        case .integer(let n): return Decimal(n)
        case .decimal(let digits): return Decimal(string: digits, locale: Locale(identifier: "en_US_POSIX"))
        case .negate(let inner): return number(inner).map { -$0 }
        default: return nil
        }
    }

    // MARK: The order of settling

    /// The fields with `relevant:` or `calculate:` in an order where each follows what its
    /// expressions read; a circle among them is an error at the first field in it.
    mutating func settleOrder(_ fields: [FieldDefinition]) -> [SettleStep] {
        struct Node {
            var step: SettleStep
            var expressions: [FieldExpression]
        }
        var nodes: [Node] = []
        func collect(_ fields: [FieldDefinition], lists: [String]) {
            for field in fields {
                let expressions = [field.relevant, field.calculate].compactMap { $0 }
                if !expressions.isEmpty { nodes.append(Node(step: SettleStep(lists: lists, field: field.name), expressions: expressions)) }
                if case .list(let list) = field.kind { collect(list.fields, lists: lists + [field.name]) }
            }
        }
        collect(fields, lists: [])
        let index = Dictionary(nodes.enumerated().map { ($1.step, $0) }, uniquingKeysWith: { a, _ in a })
        var reads: [[Int]] = []
        for node in nodes {
            var found: [Int] = []
            for path in node.expressions.flatMap(\.expression.fieldPaths) {
                let level = Array(node.step.lists.dropLast(path.up))
                var targets = [SettleStep(lists: level, field: path.names[0])]
                if path.names.count == 2 { targets.append(SettleStep(lists: level + [path.names[0]], field: path.names[1])) }
                found += targets.compactMap { index[$0] }
            }
            reads.append(found)
        }
        // Depth-first, in declaration order: a node is placed once everything it reads is.
        var state = [Int](repeating: 0, count: nodes.count)  // 0 new, 1 on the path, 2 placed
        var order: [SettleStep] = []
        for start in nodes.indices where state[start] == 0 {
            var path: [(node: Int, next: Int)] = [(start, 0)]
            state[start] = 1
            while let (n, next) = path.last {
                guard next < reads[n].count else {
                    path.removeLast()
                    state[n] = 2
                    order.append(nodes[n].step)
                    continue
                }
                path[path.count - 1].next += 1
                let m = reads[n][next]
                if state[m] == 1 {
                    let onPath = path.map(\.node)
                    let circle = onPath[onPath.firstIndex(of: m)!...] + [m]
                    error(
                        nodes[m].expressions[0].location,
                        "relevance and calculations go round in a circle: \(circle.map { nodes[$0].step.description }.joined(separator: " → "))"
                    )
                    return []
                }
                if state[m] == 0 {
                    state[m] = 1
                    path.append((m, 0))
                }
            }
        }
        return order
    }

    // MARK: Positions

    /// Where the character `offset` of an expression's text stands in the spec: quotes, escapes
    /// and folded lines are stepped over, so a mistake is shown at its column.
    func expressionLocation(_ node: YAMLNode, _ text: String, offset: Int) -> SourceLocation {
        var line = node.location.line - 1
        guard line >= 0, line < sourceLines.count else { return node.location }
        var raw = Array(sourceLines[line].unicodeScalars)
        var column = node.location.column - 1
        guard column >= 0, column < raw.count else { return node.location }
        let quote: Unicode.Scalar? = raw[column] == "'" || raw[column] == "\"" ? raw[column] : nil
        if quote != nil { column += 1 }
        var consumed = 0
        let target = Array(text.prefix(offset).unicodeScalars).count
        while consumed < target {
            if column >= raw.count {
                // A folded line break stands for the space just read.
                guard line + 1 < sourceLines.count else { break }
                line += 1
                raw = Array(sourceLines[line].unicodeScalars)
                column = raw.prefix(while: { $0 == " " || $0 == "\t" }).count
                consumed += 1
                continue
            }
            if quote == "'" && raw[column] == "'" {
                column += 2
            } else if quote == "\"" && raw[column] == "\\" {
                let escape = column + 1 < raw.count ? raw[column + 1] : "\\"
                column += escape == "x" ? 4 : escape == "u" ? 6 : escape == "U" ? 10 : 2
            } else {
                column += 1
            }
            consumed += 1
        }
        return SourceLocation(line: line + 1, column: column + 1)
    }
}

/// The numbers a field may hold, narrowed by a constraint's comparisons with literals.
struct NumberRange {
    var low: (value: Decimal, inclusive: Bool)?
    var high: (value: Decimal, inclusive: Bool)?
    /// Whether the field's own min or max started it.
    var owned = false

    init() {}

    /// The range a field's own `min`/`max` allow; nil for a field that holds no number.
    init?(_ kind: FieldKind) {
        switch kind {
        case .integer(let min, let max):
            low = min.map { (Decimal($0), true) }
            high = max.map { (Decimal($0), true) }
        case .decimal(let min, let max):
            let posix = Locale(identifier: "en_US_POSIX")
            low = min.flatMap { Decimal(string: $0, locale: posix) }.map { ($0, true) }
            high = max.flatMap { Decimal(string: $0, locale: posix) }.map { ($0, true) }
        default: return nil
        }
        owned = low != nil || high != nil
    }

    /// Narrows by `field op number` (or `number op field` when `flipped`).
    mutating func narrow(_ op: SpecExpression.BinaryOperator, _ number: Decimal, flipped: Bool) {
        var op = op
        if flipped {
            switch op {
            case .less: op = .greater
            case .lessOrEqual: op = .greaterOrEqual
            case .greater: op = .less
            case .greaterOrEqual: op = .lessOrEqual
            default: break
            }
        }
        func raise(_ value: Decimal, _ inclusive: Bool) {
            if let low, low.value > value || (low.value == value && !low.inclusive) { return }
            low = (value, inclusive)
        }
        func lower(_ value: Decimal, _ inclusive: Bool) {
            if let high, high.value < value || (high.value == value && !high.inclusive) { return }
            high = (value, inclusive)
        }
        switch op {
        case .equal:
            raise(number, true)
            lower(number, true)
        case .less: lower(number, false)
        case .lessOrEqual: lower(number, true)
        case .greater: raise(number, false)
        case .greaterOrEqual: raise(number, true)
        default: break
        }
    }

    var isEmpty: Bool {
        guard let low, let high else { return false }
        return low.value > high.value || (low.value == high.value && !(low.inclusive && high.inclusive))
    }
}
