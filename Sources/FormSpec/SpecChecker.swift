import FormSyncPattern
import Foundation

/// Turns a YAML tree into a `FormDefinition`, collecting every problem instead of stopping at the
/// first. Each check reports at the key or value it is about.
struct SpecChecker {
    let path: String
    var diagnostics: [Diagnostic] = []
    /// Fields declared so far, lists' fields included, against `maxFields`.
    var fieldCount = 0
    /// Every `reference` field's target, for the check across specs.
    var references: [ReferenceUse] = []
    /// Where each top-level field is declared.
    var fieldLocations: [String: SourceLocation] = [:]

    /// The most fields one form may declare, at every depth together.
    static let maxFields = 500
    /// How deeply lists may nest (a list of items holding a list is depth 2).
    static let maxListDepth = 3

    init(path: String) {
        self.path = path
    }

    mutating func error(_ location: SourceLocation, _ message: String) {
        diagnostics.append(Diagnostic(.error, path: path, at: location, message))
    }

    mutating func warning(_ location: SourceLocation, _ message: String) {
        diagnostics.append(Diagnostic(.warning, path: path, at: location, message))
    }

    typealias Pair = (key: YAMLNode, value: YAMLNode)

    static let topLevelKeys = ["form", "version", "description", "endpoint", "entity", "creates", "edits", "choices", "fields", "upgrades"]
    /// How many fields a record may index: the device stores one key column per indexed field.
    static let maxIndexedFields = 8

    static let recordKeys = ["record", "version", "description", "scope", "index", "choices", "fields"]
    static let commonFieldKeys = ["type", "description", "label", "required", "required_if", "conflict"]
    static let ruleKeys: [String: [String]] = [
        "text": ["min_length", "max_length", "pattern"],
        "integer": ["min", "max"],
        "decimal": ["min", "max"],
        "boolean": [], "date": [], "time": [], "datetime": [], "geopoint": [],
        "choice": ["options"],
        "multi_choice": ["options", "min_count", "max_count"],
        "money": ["min", "max", "currency", "authority"],
        "reference": ["to"],
        "photo": fileKeys, "signature": fileKeys, "audio": fileKeys, "video": fileKeys, "file": fileKeys,
        "list": ["fields", "item", "min_count", "max_count"],
    ]
    static let fileKeys = ["min_count", "max_count", "max_bytes", "content_types", "defer", "download"]
    static let typeNames = [
        "text", "integer", "decimal", "boolean", "date", "time", "datetime", "choice", "multi_choice",
        "money", "geopoint", "reference", "photo", "signature", "audio", "video", "file", "list",
    ]
    static var allFieldKeys: Set<String> { Set(commonFieldKeys + ruleKeys.values.flatMap { $0 }) }

    // MARK: What forms and records share

    /// Whether the spec declares a record (`record:`) rather than a form.
    static func isRecordSpec(_ root: YAMLNode) -> Bool {
        guard case .mapping(let pairs) = root.kind else { return false }
        return pairs.contains { $0.key.scalar == "record" } && !pairs.contains { $0.key.scalar == "form" }
    }

    /// The type name under `key` (`form:` or `record:`), when it is a usable Swift type name.
    mutating func typeName(_ keys: [String: Pair], _ key: String) -> String? {
        guard let node = keys[key]?.value, let text = text(node, key) else { return nil }
        if !Naming.isIdentifier(text, firstLowercase: false) {
            error(
                node.location, "\(key) name '\(text)' must be a Swift type name: an upper-case letter, then letters, digits or underscores")
        } else if Naming.swiftKeywords.contains(text) || Naming.reservedTypes.contains(text) {
            error(node.location, "\(key) name '\(text)' is reserved in Swift or by the FormSync runtime")
        } else {
            return text
        }
        return nil
    }

    mutating func version(_ keys: [String: Pair]) -> Int? {
        guard let node = keys["version"]?.value, let value = integer(node, "version") else { return nil }
        if value < 1 {
            error(node.location, "version must be 1 or more")
            return nil
        }
        return value
    }

    /// The shared choice lists (`choices:`), declared in `scope`.
    mutating func choiceLists(
        _ keys: [String: Pair], scope: inout TypeScope
    ) -> (named: [String: (set: ChoiceSet, location: SourceLocation)], order: [String]) {
        var namedChoices: [String: (set: ChoiceSet, location: SourceLocation)] = [:]
        var choiceOrder: [String] = []
        if let node = keys["choices"]?.value, let entries = mapping(node, "choices") {
            for (key, value) in entries {
                guard let listName = key.scalar else { continue }
                guard Naming.isIdentifier(listName, firstLowercase: true) else {
                    error(
                        key.location,
                        "choice list name '\(listName)' must start with a lower-case letter and hold only letters, digits and underscores")
                    continue
                }
                let typeName = Naming.upperCamel(listName)
                guard let options = options(value, context: "choice list '\(listName)'") else { continue }
                if declare(typeName, in: &scope, at: key.location, what: "choice list '\(listName)'") {
                    namedChoices[listName] = (
                        ChoiceSet(specName: listName, typeName: typeName, isNamed: true, options: options), key.location
                    )
                    choiceOrder.append(listName)
                }
            }
        }
        return (namedChoices, choiceOrder)
    }

    /// The fields (`fields:`), with a warning for each shared choice list no field uses.
    mutating func topFields(
        _ keys: [String: Pair], scope: inout TypeScope,
        choices: (named: [String: (set: ChoiceSet, location: SourceLocation)], order: [String]), what: String
    ) -> [FieldDefinition] {
        var usedChoices: Set<String> = []
        var fields: [FieldDefinition] = []
        if let node = keys["fields"]?.value {
            fields = checkFields(node, scope: &scope, pathPrefix: "", named: choices.named.mapValues(\.set), used: &usedChoices)
            if case .mapping(let list) = node.kind, list.isEmpty {
                error(node.location, "a \(what) needs at least one field")
            }
        }
        for listName in choices.order where !usedChoices.contains(listName) {
            warning(choices.named[listName]!.location, "choice list '\(listName)' is not used by any field")
        }
        return fields
    }

    // MARK: The record

    mutating func checkRecord(root: YAMLNode, sourceName: String) -> RecordDefinition? {
        guard let pairs = mapping(root, "a spec") else { return nil }
        let keys = keyed(pairs, allowed: Self.recordKeys, context: "at the top of a record spec")
        for required in ["record", "version", "fields"] where keys[required] == nil {
            error(root.location, "missing required key '\(required)'")
        }
        let name = typeName(keys, "record")
        let version = version(keys)
        let summary = keys["description"].flatMap { text($0.value, "description") }
        var scope = TypeScope(owner: name ?? "")
        let choices = choiceLists(keys, scope: &scope)
        let fields = topFields(keys, scope: &scope, choices: choices, what: "record")
        for field in fields where field.name == "id" || field.name == "version" {
            error(
                fieldLocations[field.name] ?? root.location,
                "field name '\(field.name)' is reserved in a record: every record carries its server id and version")
        }
        var scopeField: String?
        if let node = keys["scope"]?.value, let value = text(node, "scope") {
            if let field = fields.first(where: { $0.name == value }) {
                let isText: Bool
                if case .text = field.kind { isText = true } else { isText = false }
                if !isText {
                    error(
                        node.location,
                        "scope '\(value)' is \(article(field.kind.typeName)) \(field.kind.typeName) field; a scope is a text field compared with the device's principal"
                    )
                } else if !field.required {
                    error(node.location, "scope field '\(value)' must be required: a record without one would reach no device")
                } else {
                    scopeField = value
                }
            } else {
                error(node.location, "scope '\(value)' names no field\(suggestion(value, fields.map(\.name)))")
            }
        }
        var indexes: [String] = []
        if let node = keys["index"]?.value {
            for item in stringList(node, "index") {
                guard let field = fields.first(where: { $0.name == item.value }) else {
                    error(item.location, "index '\(item.value)' names no field\(suggestion(item.value, fields.map(\.name)))")
                    continue
                }
                if !field.kind.isIndexable {
                    error(
                        item.location,
                        "index '\(item.value)' is \(article(field.kind.typeName)) \(field.kind.typeName) field; local queries look up text, integer, boolean, date, choice and reference fields"
                    )
                } else if indexes.contains(item.value) {
                    error(item.location, "index '\(item.value)' is listed twice")
                } else if indexes.count == Self.maxIndexedFields {
                    error(
                        item.location,
                        "index '\(item.value)' is one too many: a record indexes at most \(Self.maxIndexedFields) fields (the device keeps one indexed column per field); query the others by reading the records"
                    )
                } else {
                    indexes.append(item.value)
                }
            }
        }
        guard let name, let version else { return nil }
        return RecordDefinition(
            name: name, version: version, summary: summary, choiceLists: choices.order.map { choices.named[$0]!.set }, fields: fields,
            scope: scopeField, indexes: indexes, sourceName: sourceName, nameLocation: keys["record"]?.value.location ?? root.location,
            fieldLocations: fieldLocations, references: references, versionLocation: keys["version"]?.value.location)
    }

    // MARK: Upgrades

    static let upgradeKeys = ["rename", "map", "drop", "default"]

    /// `upgrades: { 2: { rename: {old: new}, map: {field: {old: new}}, drop: [field], default: {field: value} } }`.
    mutating func checkUpgrades(_ node: YAMLNode, version: Int, fields: [FieldDefinition]) -> [UpgradeStep] {
        guard let pairs = mapping(node, "upgrades") else { return [] }
        var steps: [UpgradeStep] = []
        for (key, value) in pairs {
            guard let from = integer(key, "an upgrade's version") else { continue }
            guard from >= 1, from < version else {
                error(key.location, "upgrades: \(from) must be an older version than this spec's version \(version)")
                continue
            }
            guard let entries = mapping(value, "upgrade from version \(from)") else { continue }
            let keys = keyed(entries, allowed: Self.upgradeKeys, context: "in an upgrade")
            var step = UpgradeStep(from: from, renames: [], maps: [], drops: [], defaults: [], location: key.location)
            let current = Dictionary(fields.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            if let node = keys["rename"]?.value, let renames = mapping(node, "rename") {
                for (old, new) in renames {
                    guard let oldName = old.scalar, let newName = text(new, "rename") else { continue }
                    if current[oldName] != nil {
                        error(old.location, "rename: '\(oldName)' is still a field of this version; rename an old field that is gone")
                    } else if current[newName] == nil {
                        error(
                            new.location, "rename: '\(newName)' is not a field of this version\(suggestion(newName, Array(current.keys)))")
                    } else {
                        step.renames.append((oldName, newName))
                    }
                }
            }
            if let node = keys["map"]?.value, let maps = mapping(node, "map") {
                for (fieldKey, values) in maps {
                    guard let name = fieldKey.scalar else { continue }
                    let options: [String]
                    switch current[name]?.kind {
                    case .choice(let set), .multiChoice(let set, _): options = set.options.map(\.value)
                    default:
                        error(fieldKey.location, "map: '\(name)' is not a choice or multi_choice field of this version")
                        continue
                    }
                    guard let pairs = mapping(values, "map of '\(name)'") else { continue }
                    var mapped: [(old: String, new: String)] = []
                    for (old, new) in pairs {
                        guard let oldValue = old.scalar, let newValue = text(new, "map value") else { continue }
                        if options.contains(newValue) {
                            mapped.append((oldValue, newValue))
                        } else {
                            error(
                                new.location,
                                "map: '\(newValue)' is not an option of '\(name)'\(suggestion(newValue, options, orList: true))")
                        }
                    }
                    step.maps.append((name, mapped))
                }
            }
            if let node = keys["drop"]?.value {
                step.drops = stringList(node, "drop").map(\.value)
            }
            if let node = keys["default"]?.value, let defaults = mapping(node, "default") {
                for (fieldKey, value) in defaults {
                    guard let name = fieldKey.scalar else { continue }
                    guard let field = current[name] else {
                        error(
                            fieldKey.location, "default: '\(name)' is not a field of this version\(suggestion(name, Array(current.keys)))")
                        continue
                    }
                    if let json = defaultJSON(value, for: field) { step.defaults.append((name, json)) }
                }
            }
            steps.append(step)
        }
        return steps.sorted { $0.from < $1.from }
    }

    /// A default value as JSON text, checked against the field's type.
    mutating func defaultJSON(_ node: YAMLNode, for field: FieldDefinition) -> String? {
        func quoted(_ text: String) -> String { String(decoding: (try? JSONEncoder().encode(text)) ?? Data(), as: UTF8.self) }
        switch field.kind {
        case .text:
            return text(node, "default").map(quoted)
        case .integer:
            return integer(node, "default").map(String.init)
        case .decimal:
            return decimal(node, "default")
        case .boolean:
            return bool(node, "default").map { $0 ? "true" : "false" }
        case .choice(let set):
            guard let value = text(node, "default") else { return nil }
            guard set.options.contains(where: { $0.value == value }) else {
                error(
                    node.location,
                    "default: '\(value)' is not an option of '\(field.name)'\(suggestion(value, set.options.map(\.value), orList: true))")
                return nil
            }
            return quoted(value)
        case .date:
            guard let value = text(node, "default") else { return nil }
            guard value.count == 10, value.split(separator: "-").count == 3 else {
                error(node.location, "default: '\(value)' is not a date such as 2026-11-30")
                return nil
            }
            return quoted(value)
        default:
            error(
                node.location,
                "default: a \(field.kind.typeName) field cannot have a default; give text, integer, decimal, boolean, choice or date fields one"
            )
            return nil
        }
    }

    // MARK: The form

    mutating func check(root: YAMLNode, sourceName: String) -> FormDefinition? {
        guard let pairs = mapping(root, "a spec") else { return nil }
        let keys = keyed(pairs, allowed: Self.topLevelKeys, context: "at the top of a spec")
        for required in ["form", "version", "endpoint", "fields"] where keys[required] == nil {
            error(root.location, "missing required key '\(required)'")
        }

        let name = typeName(keys, "form")
        let version = version(keys)
        let summary = keys["description"].flatMap { text($0.value, "description") }

        var formScope = TypeScope(owner: name ?? "")
        let choices = choiceLists(keys, scope: &formScope)
        let fields = topFields(keys, scope: &formScope, choices: choices, what: "form")

        var entity: String?
        if let node = keys["entity"]?.value, let value = text(node, "entity") {
            if let field = fields.first(where: { $0.name == value }) {
                if !field.kind.canNameAPath {
                    error(
                        node.location,
                        "entity '\(value)' is \(article(field.kind.typeName)) \(field.kind.typeName) field; a lane needs a text, integer, choice or reference field"
                    )
                } else if !field.required {
                    error(node.location, "entity field '\(value)' must be required: every submission needs a lane")
                } else {
                    entity = value
                }
            } else {
                error(node.location, "entity '\(value)' names no field\(suggestion(value, fields.map(\.name)))")
            }
        }

        var endpoint: String?
        var endpointSegments: [EndpointSegment] = []
        if let node = keys["endpoint"]?.value, let value = text(node, "endpoint") {
            endpointSegments = checkEndpoint(value, node: node, fields: fields)
            endpoint = value
        }

        var binding: RecordBinding?
        if keys["creates"] != nil && keys["edits"] != nil {
            error(keys["edits"]!.key.location, "a form either creates a record or edits one, not both")
        }
        for action in [RecordBinding.Action.creates, .edits] {
            guard let node = keys[action.rawValue]?.value, let target = text(node, action.rawValue) else { continue }
            guard Naming.isIdentifier(target, firstLowercase: false) else {
                error(node.location, "'\(action.rawValue)' must name a record type in upper camel case, such as Customer")
                continue
            }
            if action == .edits {
                // The record edited is the lane: edits of one record go out in order.
                guard let entity, let field = fields.first(where: { $0.name == entity }), case .reference(let to) = field.kind, to == target
                else {
                    error(
                        node.location,
                        "a form that edits \(target) needs 'entity:' naming a required reference field with 'to: \(target)': the record it edits"
                    )
                    continue
                }
            }
            binding = RecordBinding(action: action, record: target, location: node.location)
        }

        guard let name, let version, let endpoint else { return nil }
        var form = FormDefinition(
            name: name, version: version, summary: summary, endpoint: endpoint, endpointSegments: endpointSegments,
            entity: entity, choiceLists: choices.order.map { choices.named[$0]!.set }, fields: fields,
            sourceName: sourceName, nameLocation: keys["form"]?.value.location ?? root.location, binding: binding)
        form.fieldLocations = fieldLocations
        form.references = references
        form.versionLocation = keys["version"]?.value.location
        if let node = keys["upgrades"]?.value { form.upgrades = checkUpgrades(node, version: version, fields: fields) }
        return form
    }

    /// Splits the endpoint into literal text and `{field}` placeholders, reporting each problem
    /// at its column.
    mutating func checkEndpoint(_ value: String, node: YAMLNode, fields: [FieldDefinition]) -> [EndpointSegment] {
        let offset = node.isPlainScalar ? 0 : 1
        func column(_ index: String.Index) -> SourceLocation {
            SourceLocation(
                line: node.location.line, column: node.location.column + offset + value.distance(from: value.startIndex, to: index))
        }
        if !value.hasPrefix("/") {
            error(node.location, "endpoint must be a path starting with '/'")
        }
        var segments: [EndpointSegment] = []
        var literal = ""
        var index = value.startIndex
        while index < value.endIndex {
            let ch = value[index]
            if ch != "{" { literal.append(ch) }
            if ch == "}" {
                error(column(index), "'}' without a matching '{' in endpoint")
            } else if ch == "{" {
                guard let close = value[index...].firstIndex(of: "}") else {
                    error(column(index), "'{' is not closed in endpoint")
                    break
                }
                let placeholder = String(value[value.index(after: index)..<close])
                if !literal.isEmpty { segments.append(.literal(literal)) }
                literal = ""
                if let field = fields.first(where: { $0.name == placeholder }) {
                    if !field.kind.canNameAPath {
                        error(
                            column(index),
                            "endpoint placeholder {\(placeholder)} is \(article(field.kind.typeName)) \(field.kind.typeName) field; a path needs a text, integer, choice or reference field"
                        )
                    } else if !field.required {
                        error(
                            column(index),
                            "endpoint placeholder {\(placeholder)} names a field that is not required; the endpoint could not be built without it"
                        )
                    } else {
                        segments.append(.field(placeholder))
                    }
                } else {
                    error(
                        column(index), "endpoint placeholder {\(placeholder)} names no field\(suggestion(placeholder, fields.map(\.name)))")
                }
                index = close
            } else if ch == " " || ch == "?" || ch == "#" {
                error(column(index), "endpoint may not contain '\(ch)'")
            }
            index = value.index(after: index)
        }
        if !literal.isEmpty { segments.append(.literal(literal)) }
        checkPathSegments(value, at: column)
        checkNotAProtocolRoute(value, at: column)
        return segments
    }

    /// The first segments of the protocol's own routes (docs/PROTOCOL.md, §2): a form posted
    /// there would reach the route, not the form, and every submission would be refused.
    static let protocolRoutes = ["auth", "files", "uploads", "changes", "records", "documents", "health"]

    /// A form's endpoint must not begin with a protocol route, nor with a placeholder (whose
    /// value could spell one).
    mutating func checkNotAProtocolRoute(_ value: String, at column: (String.Index) -> SourceLocation) {
        guard value.hasPrefix("/") else { return }
        let start = value.index(after: value.startIndex)
        let first = value[start...].prefix { $0 != "/" }
        if first.hasPrefix("{") {
            error(
                column(start),
                "endpoint must begin with literal text, not a placeholder: a value such as 'files' would send the form to a protocol route")
        } else if Self.protocolRoutes.contains(first.lowercased()) {
            error(
                column(start),
                "endpoint /\(first) is a route of the protocol itself (\(Self.protocolRoutes.map { "/" + $0 }.joined(separator: ", "))); choose another path"
            )
        }
    }

    /// Each `/`-separated segment must be non-empty, neither `.` nor `..` (a client's URL stack
    /// would remove them and readdress the request), and built from URI path characters (docs/PROTOCOL.md, "Standards").
    mutating func checkPathSegments(_ value: String, at column: (String.Index) -> SourceLocation) {
        guard value.hasPrefix("/") else { return }
        var start = value.index(after: value.startIndex)
        while true {
            let end = value[start...].firstIndex(of: "/") ?? value.endIndex
            let segment = value[start..<end]
            if segment.isEmpty {
                error(
                    column(start < value.endIndex ? start : value.index(before: start)),
                    "endpoint has an empty path segment ('//' or a trailing '/')")
            } else if segment == "." || segment == ".." {
                error(
                    column(start),
                    "endpoint segment '\(segment)' is not allowed: URL stacks remove dot segments and would send the request elsewhere")
            } else if let bad = segment.unicodeScalars.first(where: { !Self.isPathCharacter($0) && $0 != "{" && $0 != "}" }) {
                if bad != " " && bad != "?" && bad != "#" {  // reported above
                    error(column(start), "endpoint may not contain '\(bad)'; use letters, digits and - . _ ~ ! $ & ' ( ) * + , ; = : @")
                }
            }
            guard end < value.endIndex else { break }
            start = value.index(after: end)
        }
    }

    static func isPathCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9": return true
        default: return "-._~!$&'()*+,;=:@".unicodeScalars.contains(scalar)
        }
    }

    // MARK: Fields

    /// The Swift type names declared in one scope (the form, or one list item).
    struct TypeScope {
        var owner: String
        var names: [String: SourceLocation] = [:]
    }

    /// Declares a nested type name; false (with a diagnostic) when it clashes.
    mutating func declare(_ typeName: String, in scope: inout TypeScope, at location: SourceLocation, what: String) -> Bool {
        if let first = scope.names[typeName] {
            error(location, "\(what) becomes the Swift type '\(typeName)', which line \(first.line) already declares")
            return false
        }
        if typeName == scope.owner || Naming.reservedTypes.contains(typeName) {
            error(location, "\(what) becomes the Swift type '\(typeName)', which is reserved here; rename it")
            return false
        }
        scope.names[typeName] = location
        return true
    }

    mutating func checkFields(
        _ node: YAMLNode, scope: inout TypeScope, pathPrefix: String, named: [String: ChoiceSet],
        used: inout Set<String>
    ) -> [FieldDefinition] {
        guard let pairs = mapping(node, "fields") else { return [] }
        var fields: [FieldDefinition] = []
        var conditions: [(index: Int, node: YAMLNode)] = []
        var swiftNames: [String: (name: String, line: Int)] = [:]
        for (key, value) in pairs {
            guard let name = key.scalar else { continue }
            let display = pathPrefix + name
            fieldCount += 1
            if fieldCount == Self.maxFields + 1 {
                error(key.location, "a form holds at most \(Self.maxFields) fields (lists' fields included); split it into several forms")
            }
            if fieldCount > Self.maxFields { continue }
            guard Naming.isIdentifier(name, firstLowercase: true), !name.hasSuffix("_"), !name.contains("__") else {
                error(
                    key.location,
                    "field name '\(display)' must start with a lower-case letter and hold only letters, digits and single underscores")
                continue
            }
            let swiftName = Naming.lowerCamel(name)
            if Naming.swiftKeywords.contains(swiftName) {
                error(key.location, "field name '\(display)' is a Swift keyword; choose another name")
                continue
            }
            if Naming.reservedMembers.contains(swiftName) {
                error(key.location, "field name '\(display)' is reserved by the generated code ('\(swiftName)'); choose another name")
                continue
            }
            if let first = swiftNames[swiftName] {
                error(
                    key.location,
                    "field '\(display)' and field '\(pathPrefix + first.name)' (line \(first.line)) both become '\(swiftName)' in Swift")
                continue
            }
            swiftNames[swiftName] = (name, key.location.line)
            if pathPrefix.isEmpty { fieldLocations[name] = key.location }
            if let (field, condition) = checkField(
                name: name, swiftName: swiftName, key: key, value: value, scope: &scope, display: display,
                named: named, used: &used)
            {
                if let condition { conditions.append((fields.count, condition)) }
                fields.append(field)
            }
        }
        for (index, node) in conditions {
            fields[index].requiredIf = checkConditions(node, field: fields[index], siblings: fields, pathPrefix: pathPrefix)
            if fields[index].required && !fields[index].requiredIf.isEmpty {
                warning(node.location, "required_if has no effect: field '\(pathPrefix + fields[index].name)' is always required")
            }
        }
        return fields
    }

    /// Checks one field; returns it with its `required_if` node, resolved once all siblings are known.
    mutating func checkField(
        name: String, swiftName: String, key: YAMLNode, value: YAMLNode, scope: inout TypeScope, display: String,
        named: [String: ChoiceSet], used: inout Set<String>
    ) -> (FieldDefinition, YAMLNode?)? {
        var keys: [String: Pair] = [:]
        let typeNode: YAMLNode
        if case .scalar(let text, true) = value.kind, Self.yamlNulls.contains(text) {
            error(value.location, "field '\(display)' has no type; write for example '\(name): text'")
            return nil
        } else if case .scalar = value.kind {
            typeNode = value
        } else {
            guard let pairs = mapping(value, "field '\(display)'") else { return nil }
            keys = keyed(pairs, allowed: nil, context: "")
            guard let node = keys["type"]?.value else {
                error(key.location, "field '\(display)' needs a 'type' (one of: \(Self.typeNames.joined(separator: ", ")))")
                return nil
            }
            typeNode = node
        }
        guard let type = text(typeNode, "type") else { return nil }
        guard let rules = Self.ruleKeys[type] else {
            error(typeNode.location, "unknown field type '\(type)'\(suggestion(type, Self.typeNames, orList: true))")
            return nil
        }
        let allowed = Set(Self.commonFieldKeys + rules)
        for (keyName, pair) in keys.sorted(by: { $0.value.key.location < $1.value.key.location }) where !allowed.contains(keyName) {
            if Self.allFieldKeys.contains(keyName) {
                error(pair.key.location, "'\(keyName)' does not apply to \(article(type)) \(type) field")
            } else {
                error(pair.key.location, "unknown key '\(keyName)' in field '\(display)'\(suggestion(keyName, Array(allowed)))")
            }
        }

        let required = keys["required"].flatMap { bool($0.value, "required") } ?? false
        let summary = (keys["description"] ?? keys["label"]).flatMap { text($0.value, "description") }
        var conflict = ConflictPolicy.merge
        if let node = keys["conflict"]?.value, let value = text(node, "conflict") {
            if let policy = ConflictPolicy(rawValue: value) {
                conflict = policy
            } else {
                error(node.location, "unknown conflict policy '\(value)' (expected one of: merge, client, server, ask)")
            }
        }

        let kind: FieldKind?
        var serverAuthority = false
        switch type {
        case "text":
            let minLength = keys["min_length"].flatMap { nonNegative($0.value, "min_length") }
            let maxLength = keys["max_length"].flatMap { positive($0.value, "max_length") }
            orderCheck(minLength, maxLength, keys["max_length"], "max_length", "min_length")
            var pattern: String?
            if let node = keys["pattern"]?.value, let value = text(node, "pattern") {
                do {
                    // Kept without a leading ^ or trailing $, which mean nothing more.
                    pattern = try Pattern(value).body
                } catch {
                    for problem in error.reasons { self.error(node.location, "pattern '\(value)': \(problem)") }
                }
            }
            kind = .text(minLength: minLength, maxLength: maxLength, pattern: pattern)
        case "integer":
            let min = keys["min"].flatMap { integer($0.value, "min") }
            let max = keys["max"].flatMap { integer($0.value, "max") }
            orderCheck(min, max, keys["max"], "max", "min")
            kind = .integer(min: min, max: max)
        case "decimal":
            let min = keys["min"].flatMap { decimal($0.value, "min") }
            let max = keys["max"].flatMap { decimal($0.value, "max") }
            if let min, let max, let node = keys["max"]?.value,
                let a = Decimal(string: min, locale: Locale(identifier: "en_US_POSIX")),
                let b = Decimal(string: max, locale: Locale(identifier: "en_US_POSIX")), a > b
            {
                error(node.location, "max (\(max)) is less than min (\(min))")
            }
            kind = .decimal(min: min, max: max)
        case "boolean": kind = .boolean
        case "date": kind = .date
        case "time": kind = .time
        case "datetime": kind = .datetime
        case "geopoint": kind = .geopoint
        case "choice", "multi_choice":
            guard let node = keys["options"]?.value else {
                error(key.location, "\(type) field '\(display)' needs 'options': a list, or the name of a list in 'choices'")
                return nil
            }
            let set: ChoiceSet
            if case .scalar = node.kind {
                guard let listName = text(node, "options") else { return nil }
                guard let found = named[listName] else {
                    error(node.location, "options '\(listName)' names no choice list\(suggestion(listName, Array(named.keys)))")
                    return nil
                }
                used.insert(listName)
                set = found
            } else {
                guard let options = options(node, context: "field '\(display)'") else { return nil }
                let typeName = Naming.upperCamel(name)
                guard declare(typeName, in: &scope, at: key.location, what: "the options of field '\(display)'") else { return nil }
                set = ChoiceSet(specName: name, typeName: typeName, isNamed: false, options: options)
            }
            if type == "choice" {
                kind = .choice(set)
            } else {
                kind = .multiChoice(set, counts(keys))
            }
        case "money":
            let min = keys["min"].flatMap { integer($0.value, "min") }
            let max = keys["max"].flatMap { integer($0.value, "max") }
            orderCheck(min, max, keys["max"], "max", "min")
            var currency: String?
            if let node = keys["currency"]?.value, let value = text(node, "currency") {
                if value.count == 3, value.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) }) {
                    currency = value
                } else {
                    error(node.location, "currency '\(value)' must be an ISO 4217 code such as EUR or USD")
                }
            }
            if let node = keys["authority"]?.value, let value = text(node, "authority") {
                if value == "server" {
                    serverAuthority = true
                    if let conflictKey = keys["conflict"]?.key {
                        warning(
                            conflictKey.location,
                            "'conflict' is ignored: a money field with authority: server always takes the server's value")
                    }
                } else {
                    error(node.location, "authority must be 'server' (leave it out to let the conflict policy decide)")
                }
            }
            kind = .money(min: min.map(Int64.init), max: max.map(Int64.init), currency: currency)
        case "reference":
            guard let node = keys["to"]?.value else {
                error(key.location, "reference field '\(display)' needs 'to': the entity it refers to, such as Customer")
                return nil
            }
            guard let target = text(node, "to") else { return nil }
            guard Naming.isIdentifier(target, firstLowercase: false) else {
                error(node.location, "'to' must name an entity type in upper camel case, such as Customer")
                return nil
            }
            kind = .reference(to: target)
            references.append(ReferenceUse(field: display, target: target, location: node.location))
        case "photo", "signature", "audio", "video", "file":
            let count = counts(keys)
            var maxBytes: Int64?
            if let node = keys["max_bytes"]?.value { maxBytes = byteSize(node) }
            var contentTypes: [String] = []
            if let node = keys["content_types"]?.value {
                contentTypes = stringList(node, "content_types").filter { item in
                    let ok = Self.isMediaType(item.value)
                    if !ok { error(item.location, "'\(item.value)' is not a media type such as image/jpeg or image/*") }
                    return ok
                }.map(\.value)
            }
            let multiple = keys["min_count"] != nil || keys["max_count"] != nil
            let fileKind = FileKind(rawValue: type)!
            var defers = FileRule.defersByDefault(fileKind)
            if let node = keys["defer"]?.value, let value = bool(node, "defer") { defers = value }
            var eager = false
            if let node = keys["download"]?.value, let value = text(node, "download") {
                switch value {
                case "eager": eager = true
                case "on_access": eager = false
                default: error(node.location, "download is eager or on_access, not '\(value)'")
                }
            }
            kind = .file(
                fileKind,
                FileRule(multiple: multiple, count: count, maxBytes: maxBytes, contentTypes: contentTypes, defers: defers, eager: eager))
        case "list":
            guard let node = keys["fields"]?.value else {
                error(key.location, "list field '\(display)' needs 'fields': the fields of each item")
                return nil
            }
            guard display.split(separator: ".").count <= Self.maxListDepth else {
                error(
                    key.location,
                    "list '\(display)' nests lists deeper than \(Self.maxListDepth) levels; flatten it or make it a form of its own")
                return nil
            }
            var itemName = Naming.itemTypeName(forList: name)
            if let itemNode = keys["item"]?.value, let value = text(itemNode, "item") {
                if Naming.isIdentifier(value, firstLowercase: false) && !Naming.swiftKeywords.contains(value) {
                    itemName = value
                } else {
                    error(itemNode.location, "item '\(value)' must be a Swift type name in upper camel case")
                }
            }
            guard declare(itemName, in: &scope, at: key.location, what: "list '\(display)'") else { return nil }
            var itemScope = TypeScope(owner: itemName)
            let itemFields = checkFields(node, scope: &itemScope, pathPrefix: display + ".", named: named, used: &used)
            if case .mapping(let list) = node.kind, list.isEmpty {
                error(node.location, "list '\(display)' needs at least one field")
            }
            kind = .list(ListDefinition(itemTypeName: itemName, fields: itemFields, count: counts(keys)))
        default:
            kind = nil
        }
        guard let kind else { return nil }
        let field = FieldDefinition(
            name: name, swiftName: swiftName, summary: summary, kind: kind, required: required, requiredIf: [],
            conflict: conflict, serverAuthority: serverAuthority)
        return (field, keys["required_if"]?.value)
    }

    mutating func checkConditions(_ node: YAMLNode, field: FieldDefinition, siblings: [FieldDefinition], pathPrefix: String) -> [Condition]
    {
        guard let pairs = mapping(node, "required_if") else { return [] }
        if pairs.isEmpty { error(node.location, "required_if needs at least one condition, such as { outcome: delivered }") }
        var conditions: [Condition] = []
        for (key, value) in pairs {
            guard let name = key.scalar else { continue }
            guard let sibling = siblings.first(where: { $0.name == name }), sibling.name != field.name else {
                error(
                    key.location,
                    "required_if names '\(name)', which is not another field at this level\(suggestion(name, siblings.map(\.name).filter { $0 != field.name }))"
                )
                continue
            }
            let nodes: [YAMLNode]
            if case .sequence(let items) = value.kind { nodes = items } else { nodes = [value] }
            if nodes.isEmpty { error(value.location, "required_if needs a value for '\(name)'") }
            var values: [String] = []
            for item in nodes {
                switch sibling.kind {
                case .choice(let set):
                    guard let v = text(item, "required_if value") else { continue }
                    if set.options.contains(where: { $0.value == v }) {
                        values.append(v)
                    } else {
                        error(
                            item.location,
                            "'\(v)' is not an option of '\(pathPrefix + name)'\(suggestion(v, set.options.map(\.value), orList: true))")
                    }
                case .boolean:
                    if let b = bool(item, "required_if value") { values.append(b ? "true" : "false") }
                case .integer:
                    if let i = integer(item, "required_if value") { values.append(String(i)) }
                case .text:
                    if let t = text(item, "required_if value") { values.append(t) }
                default:
                    error(
                        key.location,
                        "required_if can test a choice, boolean, integer or text field; '\(pathPrefix + name)' is \(article(sibling.kind.typeName)) \(sibling.kind.typeName) field"
                    )
                }
            }
            if !values.isEmpty { conditions.append(Condition(field: name, values: values)) }
        }
        return conditions
    }

    // MARK: Rule values

    mutating func options(_ node: YAMLNode, context: String) -> [ChoiceOption]? {
        guard case .sequence(let items) = node.kind else {
            error(node.location, "\(context) options must be a list such as [delivered, refused]")
            return nil
        }
        if items.isEmpty {
            error(node.location, "\(context) needs at least one option")
            return nil
        }
        var options: [ChoiceOption] = []
        var seenValues: [String: SourceLocation] = [:]
        var seenCases: [String: String] = [:]
        for item in items {
            guard let value = text(item, "option") else { continue }
            guard let first = value.unicodeScalars.first, first.isASCIILetter || first.isASCIIDigit,
                value.unicodeScalars.allSatisfy({ $0.isASCIILetter || $0.isASCIIDigit || $0 == "_" })
            else {
                error(item.location, "option '\(value)' must hold only letters, digits and underscores")
                continue
            }
            if let first = seenValues[value] {
                error(item.location, "option '\(value)' is listed twice (first at line \(first.line), column \(first.column))")
                continue
            }
            var caseName = Naming.lowerCamel(value)
            if caseName.first!.isNumber { caseName = "_" + caseName }
            if let other = seenCases[caseName] {
                error(item.location, "options '\(value)' and '\(other)' both become the Swift case '\(caseName)'")
                continue
            }
            seenValues[value] = item.location
            seenCases[caseName] = value
            options.append(ChoiceOption(value: value, caseName: caseName))
        }
        return options.isEmpty ? nil : options
    }

    mutating func counts(_ keys: [String: Pair]) -> CountRule {
        let min = keys["min_count"].flatMap { nonNegative($0.value, "min_count") }
        let max = keys["max_count"].flatMap { positive($0.value, "max_count") }
        orderCheck(min, max, keys["max_count"], "max_count", "min_count")
        return CountRule(min: min, max: max)
    }

    mutating func orderCheck<T: Comparable>(_ min: T?, _ max: T?, _ maxPair: Pair?, _ maxName: String, _ minName: String) {
        if let min, let max, let node = maxPair?.value, max < min {
            error(node.location, "\(maxName) (\(max)) is less than \(minName) (\(min))")
        }
    }

    mutating func nonNegative(_ node: YAMLNode, _ what: String) -> Int? {
        guard let value = integer(node, what) else { return nil }
        if value < 0 {
            error(node.location, "\(what) must be 0 or more")
            return nil
        }
        return value
    }

    mutating func positive(_ node: YAMLNode, _ what: String) -> Int? {
        guard let value = integer(node, what) else { return nil }
        if value < 1 {
            error(node.location, "\(what) must be 1 or more")
            return nil
        }
        return value
    }

    /// `8MB`, `500KB`, `1GB` (powers of 1024) or a plain number of bytes.
    mutating func byteSize(_ node: YAMLNode) -> Int64? {
        guard let raw = node.scalar else {
            error(node.location, "max_bytes must be a size such as 8MB, 500KB or 1048576")
            return nil
        }
        if raw.allSatisfy(\.isNumber) {
            guard let value = integer(node, "max_bytes") else { return nil }
            if value < 1 {
                error(node.location, "max_bytes must be 1 or more")
                return nil
            }
            return Int64(value)
        }
        let units: [(String, Int64)] = [("KB", 1024), ("MB", 1024 * 1024), ("GB", 1024 * 1024 * 1024), ("B", 1)]
        for (suffix, factor) in units where raw.hasSuffix(suffix) {
            let digits = raw.dropLast(suffix.count)
            if let number = Int64(digits), number > 0, !digits.hasPrefix("0"), number <= Int64.max / factor {
                return number * factor
            }
        }
        error(node.location, "max_bytes '\(raw)' must be a size such as 8MB, 500KB or 1048576")
        return nil
    }

    // MARK: Typed scalars

    static let yaml11Booleans: Set<String> = [
        "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF",
        "True", "TRUE", "False", "FALSE",
    ]
    static let yamlNulls: Set<String> = ["", "~", "null", "Null", "NULL"]

    mutating func mapping(_ node: YAMLNode, _ what: String) -> [Pair]? {
        if case .invalid = node.kind { return nil }
        guard case .mapping(let pairs) = node.kind else {
            error(node.location, "\(what) must be a mapping of keys to values, found \(node.kindName)")
            return nil
        }
        return pairs
    }

    /// The pairs of a mapping by key; with `allowed`, unknown keys are reported.
    mutating func keyed(_ pairs: [Pair], allowed: [String]?, context: String) -> [String: Pair] {
        var result: [String: Pair] = [:]
        for pair in pairs {
            guard let key = pair.key.scalar else { continue }
            if let allowed, !allowed.contains(key) {
                error(pair.key.location, "unknown key '\(key)' \(context)\(suggestion(key, allowed, orList: true))")
                continue
            }
            result[key] = pair
        }
        return result
    }

    /// A text value. Plain scalars that other YAML tools would read as booleans or null are
    /// refused, so a spec means the same thing everywhere.
    mutating func text(_ node: YAMLNode, _ what: String) -> String? {
        if case .invalid = node.kind { return nil }
        guard case .scalar(let value, let plain) = node.kind else {
            error(node.location, "\(what) must be a single value, found \(node.kindName)")
            return nil
        }
        if plain {
            if Self.yamlNulls.contains(value) {
                error(node.location, "\(what) has no value")
                return nil
            }
            if Self.yaml11Booleans.contains(value) || value == "true" || value == "false" {
                error(
                    node.location, "plain '\(value)' is read as a boolean by YAML 1.1 tools; quote it (\"\(value)\") if you mean the text")
                return nil
            }
        }
        return value
    }

    mutating func bool(_ node: YAMLNode, _ what: String) -> Bool? {
        if case .invalid = node.kind { return nil }
        guard case .scalar(let value, let plain) = node.kind else {
            error(node.location, "\(what) must be true or false, found \(node.kindName)")
            return nil
        }
        if plain && value == "true" { return true }
        if plain && value == "false" { return false }
        if plain && Self.yaml11Booleans.contains(value) {
            error(node.location, "'\(value)' is not a boolean in a FormSync spec (YAML 1.1 reads it as one); write true or false")
        } else {
            error(node.location, "\(what) must be true or false, found '\(value)'")
        }
        return nil
    }

    mutating func integer(_ node: YAMLNode, _ what: String) -> Int? {
        if case .invalid = node.kind { return nil }
        guard case .scalar(let value, let plain) = node.kind else {
            error(node.location, "\(what) must be an integer, found \(node.kindName)")
            return nil
        }
        guard plain else {
            error(node.location, "\(what) must be an integer, found the quoted text '\(value)'")
            return nil
        }
        let digits = value.hasPrefix("-") ? value.dropFirst() : Substring(value)
        if digits.count > 1, digits.hasPrefix("0"), digits.allSatisfy({ $0.isASCII && $0.isNumber }) {
            let fixed = digits.drop { $0 == "0" }
            error(
                node.location,
                "'\(value)' has a leading zero, which YAML 1.1 reads as an octal number; write \(value.hasPrefix("-") ? "-" : "")\(fixed.isEmpty ? "0" : String(fixed))"
            )
            return nil
        }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            error(node.location, "\(what) must be an integer, found '\(value)'")
            return nil
        }
        guard let number = Int(value) else {
            error(node.location, "\(what) '\(value)' is outside the 64-bit range the generated Int64 holds exactly")
            return nil
        }
        return number
    }

    /// An exact decimal literal such as `12.50`, kept as written.
    mutating func decimal(_ node: YAMLNode, _ what: String) -> String? {
        if case .invalid = node.kind { return nil }
        guard case .scalar(let value, let plain) = node.kind, plain,
            Self.isDecimalLiteral(value)
        else {
            error(node.location, "\(what) must be a decimal number such as 12.5, found \(node.scalar.map { "'\($0)'" } ?? node.kindName)")
            return nil
        }
        let significant = value.filter(\.isNumber).drop { $0 == "0" }
        guard significant.count <= 38 else {
            error(node.location, "\(what) '\(value)' has more than 38 significant digits, more than the generated Decimal holds exactly")
            return nil
        }
        // Decimal's exponent stops at -128: a bound with more digits after the point would be
        // read as 0 by the generated code, as no bound by the interpreter, and as itself by the
        // JSON Schema.
        let fractionDigits = value.split(separator: ".", omittingEmptySubsequences: false).dropFirst().first?.count ?? 0
        guard fractionDigits <= 128, Decimal(string: value, locale: Locale(identifier: "en_US_POSIX")) != nil else {
            error(
                node.location,
                "\(what) '\(value.prefix(40))…' has \(fractionDigits) digits after the point; a decimal bound holds at most 128, so that every check reads it exactly"
            )
            return nil
        }
        return value
    }

    mutating func stringList(_ node: YAMLNode, _ what: String) -> [(value: String, location: SourceLocation)] {
        guard case .sequence(let items) = node.kind else {
            error(node.location, "\(what) must be a list")
            return []
        }
        return items.compactMap { item in text(item, what).map { ($0, item.location) } }
    }

    /// `type/subtype` or `type/*`, lower case, as `content_types` takes them.
    static func isMediaType(_ text: String) -> Bool {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].unicodeScalars.allSatisfy(\.isASCIILowercase) else { return false }
        if parts[1] == "*" { return true }
        guard let first = parts[1].unicodeScalars.first, first.isASCIILowercase || first.isASCIIDigit else { return false }
        return parts[1].unicodeScalars.allSatisfy { $0.isASCIILowercase || $0.isASCIIDigit || ".+-".unicodeScalars.contains($0) }
    }

    /// `-12.50`, `0`, `3`: an optional minus, an integer part without a leading zero, an optional fraction.
    static func isDecimalLiteral(_ text: String) -> Bool {
        var rest = Substring(text)
        if rest.hasPrefix("-") { rest = rest.dropFirst() }
        let parts = rest.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = parts.first, !whole.isEmpty,
            whole.unicodeScalars.allSatisfy(\.isASCIIDigit), whole == "0" || !whole.hasPrefix("0")
        else { return false }
        return parts.count == 1 || (!parts[1].isEmpty && parts[1].unicodeScalars.allSatisfy(\.isASCIIDigit))
    }

    /// ` (did you mean 'x'?)` for a near miss, or the list of choices when asked and none is near.
    func suggestion(_ word: String, _ candidates: [String], orList: Bool = false) -> String {
        Self.suggestion(word, candidates, orList: orList)
    }

    static func suggestion(_ word: String, _ candidates: [String], orList: Bool = false) -> String {
        let limit = max(1, word.count / 3)
        var best: (name: String, distance: Int)?
        for candidate in candidates.sorted() {
            let distance = Self.editDistance(word.lowercased(), candidate.lowercased())
            if distance <= limit, distance < (best?.distance ?? Int.max) { best = (candidate, distance) }
        }
        if let best { return " (did you mean '\(best.name)'?)" }
        if orList && !candidates.isEmpty { return " (expected one of: \(candidates.joined(separator: ", ")))" }
        return ""
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = Swift.min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            previous = current
        }
        return previous[b.count]
    }
}

/// "an integer", "a text".
func article(_ word: String) -> String {
    guard let first = word.first else { return "a" }
    return "aeiou".contains(first) ? "an" : "a"
}

extension FieldKind {
    /// Whether a value of this kind can stand in a URL path or a lane name.
    var canNameAPath: Bool {
        switch self {
        case .text, .integer, .choice, .reference: return true
        default: return false
        }
    }
}
