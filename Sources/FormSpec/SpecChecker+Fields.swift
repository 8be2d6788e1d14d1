import FormSyncPattern
import Foundation

/// Checking fields: names, the types they declare, nested lists, `required_if`.
extension SpecChecker {
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

        var serverAuthority = false
        let site = FieldSite(name: name, display: display, type: type, key: key, keys: keys)
        let kind: FieldKind?
        switch type {
        case "text": kind = textKind(site)
        case "integer": kind = integerKind(site)
        case "decimal": kind = decimalKind(site)
        case "boolean": kind = .boolean
        case "date": kind = .date
        case "time": kind = .time
        case "datetime": kind = .datetime
        case "geopoint": kind = .geopoint
        case "choice", "multi_choice": kind = choiceKind(site, scope: &scope, named: named, used: &used)
        case "money": kind = moneyKind(site, serverAuthority: &serverAuthority)
        case "reference": kind = referenceKind(site)
        case "photo", "signature", "audio", "video", "file": kind = fileKind(site)
        case "list": kind = listKind(site, scope: &scope, named: named, used: &used)
        default: kind = nil
        }
        guard let kind else { return nil }
        let expressionKeys = keys.filter { Self.expressionKeys.contains($0.key) }
        if !expressionKeys.isEmpty { pendingExpressions[display] = expressionKeys }
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
}
