import FormSyncCodegen

/// The JSON Schema of the spec language itself, for editors' YAML support (completion and
/// inline checks while a spec is written). The checker remains the authority: it also checks
/// what a schema cannot, such as names resolving and clashes after case conversion.
public enum SpecLanguageSchema {
    /// The schema, draft 2020-12, as checked in at FormSpecs/formspec.schema.json.
    public static func schema() -> JSONValue {
        .object([
            ("$schema", .string("https://json-schema.org/draft/2020-12/schema")),
            ("$id", .string("urn:formsync:spec-language:1")),
            ("title", .string("FormSync spec")),
            ("description", .string("One form or one record per file. See README.md, 'The spec language' and 'Records'.")),
            ("type", .string("object")),
            (
                "properties",
                .object([
                    (
                        "form",
                        describe(
                            "The Swift type name of the payload.",
                            [("type", .string("string")), ("pattern", .string("^[A-Z][A-Za-z0-9_]*$"))])
                    ),
                    (
                        "version",
                        describe(
                            "Bumped on every change to the payload's shape.", [("type", .string("integer")), ("minimum", .integer(1))])
                    ),
                    ("description", describe("Becomes the type's doc comment.", [("type", .string("string"))])),
                    (
                        "endpoint",
                        describe(
                            "Path the payload is sent to; {field} placeholders name required top-level fields.",
                            [("type", .string("string")), ("pattern", .string("^/"))])
                    ),
                    ("entity", describe("The field whose value names the ordering lane.", [("type", .string("string"))])),
                    (
                        "creates",
                        describe(
                            "The record an accepted submission creates.",
                            [("type", .string("string")), ("pattern", .string("^[A-Z][A-Za-z0-9_]*$"))])
                    ),
                    (
                        "edits",
                        describe(
                            "The record a submission edits; 'entity' is the reference to it.",
                            [("type", .string("string")), ("pattern", .string("^[A-Z][A-Za-z0-9_]*$"))])
                    ),
                    (
                        "deletes",
                        describe(
                            "The record a submission deletes (its spec says device_deletes: true); 'entity' is the reference to it.",
                            [("type", .string("string")), ("pattern", .string("^[A-Z][A-Za-z0-9_]*$"))])
                    ),
                    (
                        "upgrades",
                        describe(
                            "How items of an older version become this one, by the version they start from.",
                            [
                                ("type", .string("object")),
                                ("propertyNames", .object([("pattern", .string("^[1-9][0-9]*$"))])),
                                (
                                    "additionalProperties",
                                    .object([
                                        ("type", .string("object")),
                                        ("additionalProperties", .bool(false)),
                                        (
                                            "properties",
                                            .object([
                                                (
                                                    "rename",
                                                    describe(
                                                        "Old field name → new field name.",
                                                        [
                                                            ("type", .string("object")),
                                                            ("additionalProperties", .object([("type", .string("string"))])),
                                                        ])
                                                ),
                                                (
                                                    "map",
                                                    describe("Choice field → (old option → new option).", [("type", .string("object"))])
                                                ),
                                                (
                                                    "drop",
                                                    describe(
                                                        "Old fields whose values are discarded.",
                                                        [("type", .string("array")), ("items", .object([("type", .string("string"))]))])
                                                ),
                                                (
                                                    "default",
                                                    describe("Field → value for items that lack it.", [("type", .string("object"))])
                                                ),
                                            ])
                                        ),
                                    ])
                                ),
                            ])
                    ),
                    (
                        "record",
                        describe(
                            "The Swift type name of a record devices pull.",
                            [("type", .string("string")), ("pattern", .string("^[A-Z][A-Za-z0-9_]*$"))])
                    ),
                    (
                        "scope",
                        describe(
                            "A required text field: a device receives the records whose value is its principal.",
                            [("type", .string("string"))])
                    ),
                    (
                        "device_deletes",
                        describe(
                            "Whether devices may delete records of this type, through a form that 'deletes:' it.",
                            [("type", .string("boolean"))])
                    ),
                    (
                        "subscribe_by",
                        describe(
                            "Required fields devices subscribe by (a date by a window; text, choice, reference, integer by values): records of the type then reach a device only through its subscriptions.",
                            [
                                ("type", .string("array")), ("uniqueItems", .bool(true)), ("items", .object([("type", .string("string"))])),
                                ("minItems", .integer(1)), ("maxItems", .integer(8)),
                            ])
                    ),
                    (
                        "index",
                        describe(
                            "Fields local queries look records up by.",
                            [
                                ("type", .string("array")), ("uniqueItems", .bool(true)), ("items", .object([("type", .string("string"))])),
                            ])
                    ),
                    (
                        "choices",
                        describe(
                            "Named choice lists shared by several fields.",
                            [
                                ("type", .string("object")),
                                ("additionalProperties", ref("options")),
                            ])
                    ),
                    ("fields", ref("fields")),
                ])
            ),
            ("additionalProperties", .bool(false)),
            ("if", .object([("required", .array([.string("record")]))])),
            (
                "then",
                .object([
                    (
                        "propertyNames",
                        .object([
                            (
                                "enum",
                                .array(
                                    [
                                        "record", "version", "description", "scope", "index", "device_deletes", "subscribe_by", "choices",
                                        "fields",
                                    ].map {
                                        .string($0)
                                    })
                            )
                        ])
                    ),
                    ("required", .array([.string("record"), .string("version"), .string("fields")])),
                ])
            ),
            (
                "else",
                .object([
                    (
                        "propertyNames",
                        .object([
                            (
                                "enum",
                                .array(
                                    [
                                        "form", "version", "description", "endpoint", "entity", "creates", "edits", "deletes", "choices",
                                        "fields",
                                        "upgrades",
                                    ].map { .string($0) })
                            )
                        ])
                    ),
                    ("required", .array([.string("form"), .string("version"), .string("endpoint"), .string("fields")])),
                ])
            ),
            ("$defs", .object(definitions())),
        ])
    }

    static let fieldTypes = [
        "text", "integer", "decimal", "boolean", "date", "time", "datetime", "choice", "multi_choice", "money",
        "geopoint", "reference", "photo", "signature", "audio", "video", "file", "list",
    ]

    static func describe(_ text: String, _ rest: [(String, JSONValue)]) -> JSONValue {
        .object([("description", .string(text))] + rest)
    }

    static func ref(_ name: String) -> JSONValue {
        .object([("$ref", .string("#/$defs/\(name)"))])
    }

    static let count: JSONValue = .object([("type", .string("integer")), ("minimum", .integer(0))])

    /// A field key holding an expression, with what it does and an example.
    static func expressionKey(_ key: String, _ text: String, example: String) -> (String, JSONValue) {
        (key, describe(text, [("$ref", .string("#/$defs/expression")), ("examples", .array([.string(example)]))]))
    }

    static func definitions() -> [(String, JSONValue)] {
        let fileRules = ["min_count", "max_count", "max_bytes", "content_types", "defer", "download"]
        let rulesByType: [(String, [String])] = [
            ("text", ["min_length", "max_length", "pattern"]), ("integer", ["min", "max"]), ("decimal", ["min", "max"]),
            ("choice", ["options", "choice_filter"]), ("multi_choice", ["options", "min_count", "max_count", "choice_filter"]),
            ("money", ["min", "max", "currency", "authority"]), ("reference", ["to"]),
            ("photo", fileRules), ("signature", fileRules), ("audio", fileRules), ("video", fileRules), ("file", fileRules),
            ("list", ["fields", "item", "min_count", "max_count", "creates"]),
        ]
        let common = [
            "type", "description", "label", "required", "required_if", "conflict", "relevant", "constraint", "constraint_message",
            "calculate",
        ]
        var perType: [JSONValue] = []
        for type in fieldTypes {
            let rules = rulesByType.first { $0.0 == type }?.1 ?? []
            var then: [(String, JSONValue)] = [("propertyNames", .object([("enum", .array((common + rules).map { .string($0) }))]))]
            let needs = ["choice": "options", "multi_choice": "options", "reference": "to", "list": "fields"]
            if let needed = needs[type] { then.append(("required", .array([.string(needed)]))) }
            perType.append(
                .object([
                    ("if", .object([("properties", .object([("type", .object([("const", .string(type))]))]))])),
                    ("then", .object(then)),
                ]))
        }
        return [
            (
                "fields",
                .object([
                    ("type", .string("object")),
                    ("propertyNames", .object([("pattern", .string("^[a-z][A-Za-z0-9]*(_[A-Za-z0-9]+)*$"))])),
                    ("additionalProperties", ref("field")),
                    ("minProperties", .integer(1)),
                ])
            ),
            (
                "options",
                .object([
                    ("type", .string("array")), ("minItems", .integer(1)), ("uniqueItems", .bool(true)),
                    ("items", ref("option")),
                ])
            ),
            (
                "option",
                describe(
                    "An option's value, or its value with columns a choice_filter reads: { value: harbour, region: north }.",
                    [
                        ("type", .array([.string("string"), .string("object")])),
                        ("if", .object([("type", .string("string"))])),
                        ("then", .object([("pattern", .string("^[A-Za-z0-9][A-Za-z0-9_]*$"))])),
                        (
                            "else",
                            .object([
                                ("required", .array([.string("value")])),
                                (
                                    "properties",
                                    .object([
                                        (
                                            "value",
                                            .object([("type", .string("string")), ("pattern", .string("^[A-Za-z0-9][A-Za-z0-9_]*$"))])
                                        )
                                    ])
                                ),
                                ("additionalProperties", .object([("type", .string("string"))])),
                            ])
                        ),
                    ])
            ),
            (
                "expression",
                describe(
                    "An expression: fields (name, ../name, list.column), literals ('text', 12, 2.5, true), = != < <= > >=, and or not, + - * div, count sum min max if today now length selected.",
                    [("type", .string("string")), ("minLength", .integer(1)), ("maxLength", .integer(2000))])
            ),
            // No oneOf: an editor reports a oneOf failure as "matches none of the alternatives";
            // if/then/else and type lists let it say what is wrong with the branch that applies.
            (
                "field",
                .object([
                    ("description", .string("A field: just its type name (shorthand), or its type with rules.")),
                    ("type", .array([.string("string"), .string("object")])),
                    ("if", .object([("type", .string("string"))])),
                    ("then", describe("Shorthand: just the type name.", [("enum", .array(fieldTypes.map { .string($0) }))])),
                    (
                        "else",
                        .object([
                            ("type", .string("object")),
                            (
                                "properties",
                                .object([
                                    ("type", .object([("enum", .array(fieldTypes.map { .string($0) }))])),
                                    ("description", .object([("type", .string("string"))])),
                                    ("label", .object([("type", .string("string"))])),
                                    ("required", .object([("type", .string("boolean"))])),
                                    (
                                        "required_if",
                                        describe(
                                            "Required when a sibling field holds one of these values.",
                                            [
                                                ("type", .string("object")), ("minProperties", .integer(1)),
                                            ])
                                    ),
                                    ("conflict", .object([("enum", .array(["merge", "client", "server", "ask"].map { .string($0) }))])),
                                    expressionKey(
                                        "relevant", "When the field applies; otherwise it is hidden, cleared and not validated.",
                                        example: "passed = false"),
                                    expressionKey(
                                        "constraint", "What the field's value must satisfy, checked when it holds one.",
                                        example: "departure_time > arrival_time"),
                                    (
                                        "constraint_message",
                                        describe(
                                            "The error's sentence when the constraint fails.",
                                            [
                                                ("type", .string("string")),
                                                ("examples", .array([.string("The departure must be after the arrival.")])),
                                            ])
                                    ),
                                    expressionKey(
                                        "calculate", "How a read-only field is derived; recalculated() fills it and the server checks it.",
                                        example: "sum(lines.quantity * lines.unit_price)"),
                                    expressionKey(
                                        "choice_filter", "Which options are offered: evaluated for each, option.column naming its columns.",
                                        example: "option.region = region"),
                                    ("authority", .object([("const", .string("server"))])),
                                    ("currency", .object([("type", .string("string")), ("pattern", .string("^[A-Z]{3}$"))])),
                                    ("min", .object([("type", .string("number"))])),
                                    ("max", .object([("type", .string("number"))])),
                                    ("min_length", count),
                                    ("max_length", .object([("type", .string("integer")), ("minimum", .integer(1))])),
                                    ("pattern", .object([("type", .string("string"))])),
                                    (
                                        "options",
                                        describe(
                                            "A list of options, or the name of a list in 'choices'.",
                                            [
                                                ("type", .array([.string("array"), .string("string")])), ("minItems", .integer(1)),
                                                ("uniqueItems", .bool(true)),
                                                ("items", ref("option")),
                                            ])
                                    ),
                                    ("min_count", count),
                                    ("max_count", .object([("type", .string("integer")), ("minimum", .integer(1))])),
                                    (
                                        "max_bytes",
                                        describe(
                                            "Bytes, or a size such as 8MB, 500KB, 1GB.",
                                            [
                                                ("type", .array([.string("integer"), .string("string")])), ("minimum", .integer(1)),
                                                ("pattern", .string("^[1-9][0-9]*(B|KB|MB|GB)$")),
                                            ])
                                    ),
                                    (
                                        "content_types",
                                        .object([
                                            ("type", .string("array")),
                                            (
                                                "items",
                                                .object([
                                                    ("type", .string("string")),
                                                    ("pattern", .string("^[a-z]+/([a-z0-9][a-z0-9.+-]*|\\*)$")),
                                                ])
                                            ),
                                        ])
                                    ),
                                    (
                                        "defer",
                                        describe(
                                            "Whether the field's files may reach the server after the submission (default: true for photo, audio and video).",
                                            [
                                                ("type", .string("boolean"))
                                            ])
                                    ),
                                    (
                                        "download",
                                        describe(
                                            "When devices fetch the field's files of pulled records: eager (as soon as pulled) or on_access (the default).",
                                            [
                                                ("enum", .array([.string("eager"), .string("on_access")]))
                                            ])
                                    ),
                                    ("to", .object([("type", .string("string")), ("pattern", .string("^[A-Z][A-Za-z0-9_]*$"))])),
                                    ("item", .object([("type", .string("string")), ("pattern", .string("^[A-Z][A-Za-z0-9_]*$"))])),
                                    (
                                        "creates",
                                        describe(
                                            "(list) The record each item creates: a record type, or { record, form_fields } to copy the form's own fields into each.",
                                            [
                                                ("type", .array([.string("string"), .string("object")])),
                                                ("if", .object([("type", .string("string"))])),
                                                ("then", .object([("pattern", .string("^[A-Z][A-Za-z0-9_]*$"))])),
                                                (
                                                    "else",
                                                    .object([
                                                        ("required", .array([.string("record")])),
                                                        ("additionalProperties", .bool(false)),
                                                        (
                                                            "properties",
                                                            .object([
                                                                (
                                                                    "record",
                                                                    .object([
                                                                        ("type", .string("string")),
                                                                        ("pattern", .string("^[A-Z][A-Za-z0-9_]*$")),
                                                                    ])
                                                                ),
                                                                (
                                                                    "form_fields",
                                                                    .object([
                                                                        ("type", .string("array")), ("uniqueItems", .bool(true)),
                                                                        ("items", .object([("type", .string("string"))])),
                                                                    ])
                                                                ),
                                                            ])
                                                        ),
                                                    ])
                                                ),
                                            ])
                                    ),
                                    ("fields", ref("fields")),
                                ])
                            ),
                            ("required", .array([.string("type")])),
                            ("allOf", .array(perType)),
                        ])
                    ),
                ])
            ),
        ]
    }
}
