import FormSpec

/// Translates a checked form into a JSON Schema (draft 2020-12) of its payload, for backends
/// that are not written in Swift. It states the same rules the generated validator runs.
public enum JSONSchemaGenerator {
    /// The schema of `form`'s payload.
    public static func schema(for form: FormDefinition) -> JSONValue {
        var root: [(String, JSONValue)] = [
            ("$schema", .string("https://json-schema.org/draft/2020-12/schema")),
            ("$id", .string("urn:formsync:form:\(form.name):\(form.version)")),
            ("title", .string(form.name)),
        ]
        if let summary = form.summary { root.append(("description", .string(summary))) }
        root += objectSchema(form.fields)
        root.append(("$defs", .object(definitions)))
        var meta: [(String, JSONValue)] = [
            ("form", .string(form.name)), ("version", .integer(Int64(form.version))), ("endpoint", .string(form.endpoint)),
        ]
        if let entity = form.entity { meta.append(("entity", .string(entity))) }
        if let binding = form.binding { meta.append((binding.action.rawValue, .string(binding.record))) }
        root.append(("x-formsync", .object(meta)))
        if !form.upgrades.isEmpty {
            root.append(("x-formsync-upgrades", .array(form.upgrades.sorted { $0.from < $1.from }.map(upgradeStep))))
        }
        return .object(root)
    }

    /// One step of the form's `upgrades:` as a server that is not written in Swift applies it
    /// (docs/PROTOCOL.md, "Older form versions"): a payload of version `from` becomes one of
    /// version `to` by its renames, then its value maps, then its drops, then its defaults (a
    /// default fills only a field the payload does not hold).
    static func upgradeStep(_ step: UpgradeStep) -> JSONValue {
        var pairs: [(String, JSONValue)] = [("from", .integer(Int64(step.from))), ("to", .integer(Int64(step.from) + 1))]
        if !step.renames.isEmpty { pairs.append(("rename", .object(step.renames.map { ($0.old, .string($0.new)) }))) }
        if !step.maps.isEmpty {
            pairs.append(("map", .object(step.maps.map { map in (map.field, .object(map.values.map { ($0.old, .string($0.new)) })) })))
        }
        if !step.drops.isEmpty { pairs.append(("drop", .array(step.drops.map { .string($0) }))) }
        if !step.defaults.isEmpty { pairs.append(("default", .object(step.defaults.map { ($0.field, .json($0.json)) }))) }
        return .object(pairs)
    }

    /// The schema of `record`'s fields, as the change feed and `/records/{type}/{id}` carry them.
    public static func schema(for record: RecordDefinition) -> JSONValue {
        var root: [(String, JSONValue)] = [
            ("$schema", .string("https://json-schema.org/draft/2020-12/schema")),
            ("$id", .string("urn:formsync:record:\(record.name):\(record.version)")),
            ("title", .string(record.name)),
        ]
        if let summary = record.summary { root.append(("description", .string(summary))) }
        root += objectSchema(record.fields)
        root.append(("$defs", .object(definitions)))
        var meta: [(String, JSONValue)] = [("record", .string(record.name)), ("version", .integer(Int64(record.version)))]
        if let scope = record.scope { meta.append(("scope", .string(scope))) }
        if !record.indexes.isEmpty { meta.append(("index", .array(record.indexes.map { .string($0) }))) }
        if record.deviceDeletes { meta.append(("device_deletes", .bool(true))) }
        if !record.subscribeBy.isEmpty { meta.append(("subscribe_by", .array(record.subscribeBy.map { .string($0) }))) }
        root.append(("x-formsync", .object(meta)))
        return .object(root)
    }

    /// The schemas every payload schema shares (`Money`, `FileRef`, …), by name: what each
    /// payload schema's `#/$defs/<name>` names.
    public static var sharedDefinitions: [(name: String, schema: JSONValue)] { definitions }

    static let definitions: [(String, JSONValue)] = [
        (
            "Money",
            .object([
                ("description", .string("An exact amount: integer minor units and an ISO 4217 currency code.")),
                ("type", .string("object")),
                (
                    "properties",
                    .object([
                        ("minor_units", .object([("type", .string("integer"))])),
                        ("currency", .object([("type", .string("string")), ("pattern", .string("^[A-Z]{3}$"))])),
                    ])
                ),
                ("required", .array([.string("minor_units"), .string("currency")])),
                ("additionalProperties", .bool(false)),
            ])
        ),
        (
            "FileRef",
            .object([
                (
                    "description",
                    .string(
                        "A file: the server's positive id once its bytes are stored, or, for a file that goes after the submission, its digest, size and media type (pending)."
                    )
                ),
                ("type", .string("object")),
                (
                    "properties",
                    .object([
                        ("id", .object([("type", .string("integer")), ("not", .object([("const", .integer(0))]))])),
                        ("byte_count", .object([("type", .string("integer")), ("minimum", .integer(0))])),
                        ("content_type", .object([("type", .string("string"))])),
                        ("digest", .object([("type", .string("string")), ("pattern", .string("^sha-256=:[A-Za-z0-9+/]{43}=:$"))])),
                    ])
                ),
                (
                    "oneOf",
                    .array([
                        .object([("required", .array([.string("id")]))]),
                        .object([
                            ("required", .array([.string("digest"), .string("byte_count"), .string("content_type")])),
                            ("not", .object([("required", .array([.string("id")]))])),
                        ]),
                    ])
                ),
                ("additionalProperties", .bool(false)),
            ])
        ),
        (
            "GeoPoint",
            .object([
                ("description", .string("WGS 84 degrees, with the horizontal accuracy in metres when known.")),
                ("type", .string("object")),
                (
                    "properties",
                    .object([
                        ("latitude", .object([("type", .string("number")), ("minimum", .integer(-90)), ("maximum", .integer(90))])),
                        ("longitude", .object([("type", .string("number")), ("minimum", .integer(-180)), ("maximum", .integer(180))])),
                        ("accuracy", .object([("type", .string("number")), ("minimum", .integer(0))])),
                    ])
                ),
                ("required", .array([.string("latitude"), .string("longitude")])),
                ("additionalProperties", .bool(false)),
            ])
        ),
    ]

    static func objectSchema(_ fields: [FieldDefinition]) -> [(String, JSONValue)] {
        var result: [(String, JSONValue)] = [
            ("type", .string("object")),
            ("properties", .object(fields.map { ($0.name, fieldSchema($0)) })),
        ]
        // A multi-valued field with a min_count is needed even when not `required`: left out it
        // holds nothing, which `validate()` counts.
        let required = fields.filter { field in
            // Required only where it applies: said by the relevance's if/then below, when it can be.
            if field.relevant != nil { return false }
            if field.required { return true }
            switch field.kind {
            case .multiChoice(_, let count): return (count.min ?? 0) > 0
            case .list(let list): return (list.count.min ?? 0) > 0
            case .file(_, let rule): return rule.multiple && (rule.count.min ?? 0) > 0
            default: return false
            }
        }.map { JSONValue.string($0.name) }
        if !required.isEmpty { result.append(("required", .array(required))) }
        result.append(("additionalProperties", .bool(false)))
        var conditions: [JSONValue] = []
        for field in fields {
            for condition in field.requiredIf {
                guard let sibling = fields.first(where: { $0.name == condition.field }) else { continue }
                let values = condition.values.map { conditionValue($0, sibling) }
                let test: JSONValue = values.count == 1 ? .object([("const", values[0])]) : .object([("enum", .array(values))])
                conditions.append(
                    .object([
                        (
                            "if",
                            .object([
                                ("properties", .object([(condition.field, test)])),
                                ("required", .array([.string(condition.field)])),
                            ])
                        ),
                        ("then", .object([("required", .array([.string(field.name)]))])),
                    ]))
            }
        }
        for field in fields {
            guard let relevant = field.relevant, let test = simpleCondition(relevant.expression, fields) else { continue }
            // Where it applies it may be required; where it does not, it must be left out.
            var branch: [(String, JSONValue)] = [("if", test)]
            if field.required { branch.append(("then", .object([("required", .array([.string(field.name)]))]))) }
            // A field of several values holds nothing when it is empty, as `validate()` reads
            // it: the generated code encodes a list that does not apply as `[]`.
            let leftOut: JSONValue =
                field.kind.holdsSeveralValues
                ? .object([("properties", .object([(field.name, .object([("maxItems", .integer(0))]))]))])
                : .object([("not", .object([("required", .array([.string(field.name)]))]))])
            branch.append(("else", leftOut))
            conditions.append(.object(branch))
        }
        if !conditions.isEmpty { result.append(("allOf", .array(conditions))) }
        return result
    }

    /// A relevance JSON Schema can state: `field = literal`, `field != literal`, and several
    /// joined by `and`, each on a boolean, integer, text or choice field of the same level. An
    /// absent field makes the expression unknown, so each field named is required by the test.
    static func simpleCondition(_ expression: SpecExpression, _ fields: [FieldDefinition]) -> JSONValue? {
        var properties: [(String, JSONValue)] = []
        var names: [String] = []
        var stack = [expression]
        while let node = stack.popLast() {
            switch node.kind {
            case .binary(.and, let a, let b):
                stack.append(b)
                stack.append(a)
            case .binary(let op, let a, let b) where op == .equal || op == .notEqual:
                guard case .field(let path) = a.kind, path.up == 0, path.names.count == 1,
                    let field = fields.first(where: { $0.name == path.names[0] }), !names.contains(field.name)
                else { return nil }
                let value: JSONValue
                switch (field.kind, b.kind) {
                case (.boolean, .boolean(let v)): value = .bool(v)
                case (.integer, .integer(let v)): value = .integer(v)
                case (.text, .text(let v)), (.choice, .text(let v)): value = .string(v)
                default: return nil
                }
                let test: JSONValue = .object([("const", value)])
                properties.append((field.name, op == .equal ? test : .object([("not", test)])))
                names.append(field.name)
            default:
                return nil
            }
        }
        return .object([("properties", .object(properties)), ("required", .array(names.map { .string($0) }))])
    }

    static func conditionValue(_ value: String, _ sibling: FieldDefinition) -> JSONValue {
        switch sibling.kind {
        case .boolean: return .bool(value == "true")
        case .integer: return .integer(Int64(value) ?? 0)
        default: return .string(value)
        }
    }

    static func fieldSchema(_ field: FieldDefinition) -> JSONValue {
        var schema: [(String, JSONValue)] = []
        if let summary = field.summary { schema.append(("description", .string(summary))) }
        schema += kindSchema(field.kind)
        if field.required {
            // What `validate()` calls missing: blank text, an empty list.
            switch field.kind {
            case .text:
                schema.append(("not", .object([("pattern", .string("^\\s*$"))])))
            case .multiChoice(_, let count):
                if (count.min ?? 0) < 1 { schema = schema.filter { $0.0 != "minItems" } + [("minItems", .integer(1))] }
            case .list(let list):
                if (list.count.min ?? 0) < 1 { schema = schema.filter { $0.0 != "minItems" } + [("minItems", .integer(1))] }
            case .file(_, let rule) where rule.multiple:
                if (rule.count.min ?? 0) < 1 { schema = schema.filter { $0.0 != "minItems" } + [("minItems", .integer(1))] }
            default:
                break
            }
        }
        if field.serverAuthority { schema.append(("x-formsync-authority", .string("server"))) }
        if let relevant = field.relevant { schema.append(("x-formsync-relevant", .string(relevant.text))) }
        if let constraint = field.constraint {
            schema.append(("x-formsync-constraint", .string(constraint.text)))
            if let message = field.constraintMessage { schema.append(("x-formsync-constraint-message", .string(message))) }
        }
        if let calculate = field.calculate { schema.append(("x-formsync-calculate", .string(calculate.text))) }
        if let filter = field.choiceFilter {
            schema.append(("x-formsync-choice-filter", .string(filter.text)))
            // What `option.<column>` reads, for a server that evaluates the filter itself.
            let set: ChoiceSet? =
                switch field.kind {
                case .choice(let set), .multiChoice(let set, _): set
                default: nil
                }
            if let set, !set.columns.isEmpty {
                schema.append(
                    (
                        "x-formsync-options",
                        .array(
                            set.options.map { option in
                                .object(
                                    [("value", .string(option.value))]
                                        + zip(set.columns, option.columnValues).map { ($0.0, JSONValue.string($0.1)) })
                            })
                    ))
            }
        }
        if field.conflict != .merge { schema.append(("x-formsync-conflict", .string(field.conflict.rawValue))) }
        return .object(schema)
    }

    static func counts(_ count: CountRule) -> [(String, JSONValue)] {
        var out: [(String, JSONValue)] = []
        if let min = count.min { out.append(("minItems", .integer(Int64(min)))) }
        if let max = count.max { out.append(("maxItems", .integer(Int64(max)))) }
        return out
    }

    static func fileSchema(_ rule: FileRule) -> JSONValue {
        var properties: [(String, JSONValue)] = []
        if let maxBytes = rule.maxBytes { properties.append(("byte_count", .object([("maximum", .integer(maxBytes))]))) }
        if !rule.contentTypes.isEmpty {
            // Media types compare without regard to case (docs/PROTOCOL.md, "Standards"), by
            // their registered names and without parameters, as `validate()` compares them.
            let alternatives = rule.contentTypes.flatMap { type in
                type.hasSuffix("/*")
                    ? [anyCase(escapeRegex(String(type.dropLast()))) + "[^;]+"]
                    : MediaTypeAliases.names(of: type.lowercased()).map { anyCase(escapeRegex($0)) }
            }
            properties.append(
                ("content_type", .object([("pattern", .string("^\\s*(" + alternatives.joined(separator: "|") + ")\\s*(;.*)?$"))])))
        }
        var schema: [(String, JSONValue)] = [("$ref", .string("#/$defs/FileRef"))]
        if !properties.isEmpty { schema.append(("properties", .object(properties))) }
        return .object(schema)
    }

    /// `image/jpeg` as `[iI][mM][aA][gG][eE]/[jJ][pP][eE][gG]`.
    static func anyCase(_ s: String) -> String {
        s.map { ch in ch.isLetter && ch.isASCII ? "[\(ch.lowercased())\(ch.uppercased())]" : String(ch) }.joined()
    }

    static func escapeRegex(_ s: String) -> String {
        var out = ""
        for ch in s {
            if ".+*?^$()[]{}|\\/".contains(ch) { out += "\\" }
            out.append(ch)
        }
        return out
    }

    static func kindSchema(_ kind: FieldKind) -> [(String, JSONValue)] {
        switch kind {
        case .text(let minLength, let maxLength, let pattern):
            var out: [(String, JSONValue)] = [("type", .string("string"))]
            if let minLength { out.append(("minLength", .integer(Int64(minLength)))) }
            if let maxLength { out.append(("maxLength", .integer(Int64(maxLength)))) }
            // The empty text passes a pattern (as in `validate()`); `required` is what refuses it.
            if let pattern { out.append(("pattern", .string("^(?:(?:" + pattern + "))?$"))) }
            return out
        case .integer(let min, let max):
            var out: [(String, JSONValue)] = [("type", .string("integer"))]
            if let min { out.append(("minimum", .integer(Int64(min)))) }
            if let max { out.append(("maximum", .integer(Int64(max)))) }
            return out
        case .decimal(let min, let max):
            var out: [(String, JSONValue)] = [("type", .string("number"))]
            if let min { out.append(("minimum", .number(min))) }
            if let max { out.append(("maximum", .number(max))) }
            return out
        case .boolean:
            return [("type", .string("boolean"))]
        case .date:
            return [("type", .string("string")), ("format", .string("date")), ("pattern", .string("^[0-9]{4}-[0-9]{2}-[0-9]{2}$"))]
        case .time:
            return [("type", .string("string")), ("pattern", .string("^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?$"))]
        case .datetime:
            return [("type", .string("string")), ("format", .string("date-time"))]
        case .choice(let set):
            return [("enum", .array(set.options.map { .string($0.value) }))]
        case .multiChoice(let set, let count):
            return [
                ("type", .string("array")), ("items", .object([("enum", .array(set.options.map { .string($0.value) }))])),
                ("uniqueItems", .bool(true)),
            ] + counts(count)
        case .money(let min, let max, let currency):
            var properties: [(String, JSONValue)] = []
            var bounds: [(String, JSONValue)] = []
            if let min { bounds.append(("minimum", .integer(min))) }
            if let max { bounds.append(("maximum", .integer(max))) }
            if !bounds.isEmpty { properties.append(("minor_units", .object(bounds))) }
            if let currency { properties.append(("currency", .object([("const", .string(currency))]))) }
            var out: [(String, JSONValue)] = [("$ref", .string("#/$defs/Money"))]
            if !properties.isEmpty { out.append(("properties", .object(properties))) }
            return out
        case .geopoint:
            return [("$ref", .string("#/$defs/GeoPoint"))]
        case .reference(let target):
            return [
                ("type", .string("integer")), ("not", .object([("const", .integer(0))])),
                ("x-formsync-reference", .string(target)),
            ]
        case .file(let kind, let rule):
            if rule.multiple {
                return [("type", .string("array")), ("items", fileSchema(rule))] + counts(rule.count)
                    + [("x-formsync-file", .string(kind.rawValue))]
            }
            guard case .object(let pairs) = fileSchema(rule) else { return [] }
            return pairs + [("x-formsync-file", .string(kind.rawValue))]
        case .list(let list):
            var schema: [(String, JSONValue)] =
                [("type", .string("array")), ("items", .object(objectSchema(list.fields)))] + counts(list.count)
            if let creation = list.creates {
                schema.append(
                    (
                        "x-formsync-creates",
                        .object([
                            ("record", .string(creation.record)), ("form_fields", .array(creation.formFields.map { .string($0) })),
                        ])
                    ))
            }
            return schema
        }
    }
}
