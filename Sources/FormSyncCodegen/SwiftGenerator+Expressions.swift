import FormSpec

/// The generated code of a spec's expressions: one helper per expression, the rules they add to
/// `validate()`, and the members a UI calls (`recalculated()`, `isRelevant(_:)`,
/// `offeredOptions(for:)`).
extension SwiftGenerator {
    /// The level above a list item: its Swift type and its fields.
    typealias Parent = (type: String, fields: [FieldDefinition])

    /// `name(parent: parent)` inside an item, `name()` at the top.
    static func helperCall(_ name: String, _ parent: Parent?, on owner: String? = nil, parentValue: String = "parent") -> String {
        (owner.map { $0 + "." } ?? "") + name + (parent == nil ? "()" : "(parent: \(parentValue))")
    }

    static func helperName(_ kind: String, _ field: FieldDefinition) -> String { "\(kind)_\(field.swiftName)" }

    static func hasValue(_ field: FieldDefinition, on owner: String = "self") -> String {
        let member = "\(owner).\(name(field))"
        return field.kind.holdsSeveralValues ? "!\(member).isEmpty" : "\(member) != nil"
    }

    static func holdsExpressions(_ fields: [FieldDefinition]) -> Bool {
        fields.contains { $0.relevant != nil || $0.constraint != nil || $0.calculate != nil || $0.choiceFilter != nil }
    }

    /// One internal function per expression of `fields`.
    static func emitExpressionHelpers(fields: [FieldDefinition], scope: Scope, parent: Parent?, into w: inout CodeWriter) {
        guard holdsExpressions(fields) else { return }
        let translator = ExpressionTranslator(here: "self", fields: fields, parent: "parent", parentFields: parent?.fields)
        let parameter = parent.map { "parent: \($0.type)" } ?? ""
        for field in fields {
            if let relevant = field.relevant {
                w.line()
                w.doc("`relevant: \(relevant.text)`")
                w.line("func \(helperName("relevant", field))(\(parameter)) -> Bool? { \(translator.swift(relevant.expression)) }")
            }
            if let constraint = field.constraint {
                w.line()
                w.doc("`constraint: \(constraint.text)`")
                w.line("func \(helperName("constraint", field))(\(parameter)) -> Bool? { \(translator.swift(constraint.expression)) }")
            }
            if let calculate = field.calculate {
                w.line()
                w.doc("`calculate: \(calculate.text)`")
                var value = translator.swift(calculate.expression)
                if case .decimal = field.kind { value = "Formula.decimal(\(translator.widened(calculate.expression, to: .decimal)))" }
                w.line("func \(helperName("calculated", field))(\(parameter)) -> \(declaredType(field, scope)) { \(value) }")
            }
            if let filter = field.choiceFilter, let set = choiceSet(field) {
                w.line()
                w.doc("`choice_filter: \(filter.text)`")
                var optionTranslator = translator
                optionTranslator.option = "option"
                let parameters = ["_ option: \(scope.qualified(set))"] + (parent.map { ["parent: \($0.type)"] } ?? [])
                w.line(
                    "func \(helperName("offers", field))(\(parameters.joined(separator: ", "))) -> Bool? { \(optionTranslator.swift(filter.expression)) }"
                )
            }
        }
    }

    static func choiceSet(_ field: FieldDefinition) -> ChoiceSet? {
        switch field.kind {
        case .choice(let set), .multiChoice(let set, _): return set
        default: return nil
        }
    }

    static func offersCall(_ field: FieldDefinition, _ option: String, _ parent: Parent?) -> String {
        "\(helperName("offers", field))(\(option)\(parent == nil ? "" : ", parent: parent"))"
    }

    /// The rules a field's expressions add to its validation, after its own.
    static func expressionRules(_ field: FieldDefinition, pointer p: String, parent: Parent?) -> [String] {
        var lines: [String] = []
        let n = name(field)
        if let constraint = field.constraint {
            let message = field.constraintMessage ?? "Must satisfy: \(constraint.text)."
            lines.append(
                "validator.constraint(\(helperCall(helperName("constraint", field), parent)), holdsValue: \(hasValue(field)), message: \(swiftLiteral(message)), at: \(p))"
            )
        }
        if field.calculate != nil {
            lines.append("validator.calculated(\(n), \(helperCall(helperName("calculated", field), parent)), at: \(p))")
        }
        if field.choiceFilter != nil {
            if case .multiChoice = field.kind {
                lines.append(
                    "for (index, option) in \(n).enumerated() { validator.offered(\(offersCall(field, "option", parent)), value: option.rawValue, at: JSONPointer.appending(\(p), index)) }"
                )
            } else {
                lines.append(
                    "if let option = \(n) { validator.offered(\(offersCall(field, "option", parent)), value: option.rawValue, at: \(p)) }")
            }
        }
        return lines
    }

    /// Writes `rules`, guarded by the field's relevance when it has one.
    static func emitRelevantRules(_ field: FieldDefinition, _ rules: [String], pointer p: String, parent: Parent?, into w: inout CodeWriter)
    {
        guard field.relevant != nil else {
            for line in rules { w.line(line) }
            return
        }
        w.line("if \(helperCall(helperName("relevant", field), parent)) != true {")
        w.line("    validator.notRelevant(holdsValue: \(hasValue(field)), at: \(p))")
        if rules.isEmpty {
            w.line("}")
            return
        }
        w.line("} else {")
        for line in rules { w.line("    " + line) }
        w.line("}")
    }

    // MARK: What a UI calls

    /// `isRelevant(_:)` and `offeredOptions(for:)` of one level.
    static func emitFieldQueries(fields: [FieldDefinition], scope: Scope, parent: Parent?, into w: inout CodeWriter) {
        let parameter = parent.map { ", parent: \($0.type)" } ?? ""
        let access = parent == nil ? "public " : ""
        w.doc(
            parent == nil
                ? "Whether `field` applies now (its `relevant:` holds, and its list's): a form shows only the fields that do."
                : "Whether `field` of this item applies now.")
        w.block("\(access)func isRelevant(_ field: Field\(parameter)) -> Bool") { w in
            let relevant = fields.filter { $0.relevant != nil || holdsList($0) }
            guard !relevant.isEmpty else {
                w.line("true")
                return
            }
            w.switchBlock("switch field") { w in
                for field in relevant {
                    let own = field.relevant == nil ? "true" : "\(helperCall(helperName("relevant", field), parent)) == true"
                    if case .list = field.kind {
                        w.line("case .\(name(field))(let index, let inner):")
                        if own != "true" { w.line("    guard \(own) else { return false }") }
                        w.line("    guard let index, let inner, \(name(field)).indices.contains(index) else { return true }")
                        w.line("    return \(name(field))[index].isRelevant(inner, parent: self)")
                    } else {
                        w.line("case .\(name(field))\(isIndexed(field) ? "(_)" : ""):")
                        w.line("    return \(own)")
                    }
                }
                if relevant.count < fields.count {
                    w.line("default:")
                    w.line("    return true")
                }
            }
        }
        w.line()
        w.doc(
            "The options `field` offers now, as their wire values: every option of a choice field, those its `choice_filter:` lets through; none for other fields."
        )
        w.block("\(access)func offeredOptions(for field: Field\(parameter)) -> [String]") { w in
            let choosing = fields.filter { choiceSet($0) != nil || holdsList($0) }
            guard !choosing.isEmpty else {
                w.line("[]")
                return
            }
            w.switchBlock("switch field") { w in
                for field in choosing {
                    if case .list = field.kind {
                        w.line("case .\(name(field))(let index, let inner):")
                        w.line("    guard let index, let inner, \(name(field)).indices.contains(index) else { return [] }")
                        w.line("    return \(name(field))[index].offeredOptions(for: inner, parent: self)")
                    } else if let set = choiceSet(field) {
                        w.line("case .\(name(field))\(isIndexed(field) ? "(_)" : ""):")
                        let all = "\(scope.qualified(set)).allCases"
                        if field.choiceFilter != nil {
                            w.line("    return \(all).filter { \(offersCall(field, "$0", parent)) == true }.map(\\.rawValue)")
                        } else {
                            w.line("    return \(all).map(\\.rawValue)")
                        }
                    }
                }
                if choosing.count < fields.count {
                    w.line("default:")
                    w.line("    return []")
                }
            }
        }
    }

    /// `recalculated()`: the form's settle steps, in the checker's order.
    static func emitRecalculated(_ form: FormDefinition, scope: Scope, into w: inout CodeWriter) {
        w.doc(
            "A copy with every calculated field recalculated and every field that does not apply cleared, in an order where each follows what it reads. The outbox queues this copy."
        )
        w.block("public func recalculated() -> \(form.name)") { w in
            guard !form.settleSteps.isEmpty else {
                w.line("self")
                return
            }
            w.line("var copy = self")
            for (number, step) in form.settleSteps.enumerated() { emitStep(step, number: number, form: form, into: &w) }
            w.line("return copy")
        }
    }

    private static func emitStep(_ step: SettleStep, number: Int, form: FormDefinition, into w: inout CodeWriter) {
        var fields = form.fields
        var owner = "copy"
        var parentOwner: String?
        var parent: Parent?
        var typePath = [form.name]
        var loops = 0
        for (depth, listName) in step.lists.enumerated() {
            guard let list = fields.first(where: { $0.name == listName }), case .list(let items) = list.kind else { return }
            let index = "i\(depth)"
            w.line(String(repeating: "    ", count: depth) + "for \(index) in \(owner).\(name(list)).indices {")
            loops += 1
            parent = (typePath.joined(separator: "."), fields)
            parentOwner = owner
            owner = "\(owner).\(name(list))[\(index)]"
            typePath.append(items.itemTypeName)
            fields = items.fields
        }
        guard let field = fields.first(where: { $0.name == step.field }) else { return }
        let indent = String(repeating: "    ", count: loops)
        let empty = field.kind.holdsSeveralValues ? "[]" : "nil"
        let member = "\(owner).\(name(field))"
        let relevant = field.relevant.map { _ in
            helperCall(helperName("relevant", field), parent, on: owner, parentValue: parentOwner ?? "")
        }
        let calculated = field.calculate.map { _ in
            helperCall(helperName("calculated", field), parent, on: owner, parentValue: parentOwner ?? "")
        }
        switch (relevant, calculated) {
        case (let relevant?, let calculated?):
            w.line("\(indent)let value\(number) = \(relevant) == true ? \(calculated) : nil")
            w.line("\(indent)\(member) = value\(number)")
        case (let relevant?, nil):
            w.line("\(indent)if \(relevant) != true { \(member) = \(empty) }")
        case (nil, let calculated?):
            w.line("\(indent)let value\(number) = \(calculated)")
            w.line("\(indent)\(member) = value\(number)")
        case (nil, nil):
            break
        }
        for depth in stride(from: loops - 1, through: 0, by: -1) { w.line(String(repeating: "    ", count: depth) + "}") }
    }
}
