import FormSyncPattern
import Foundation

/// Checking a form spec (`form: Name`): the top level, the entity, what it creates or edits.
extension SpecChecker {
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
        var fields = topFields(keys, scope: &formScope, choices: choices, what: "form")
        checkExpressions(&fields, parent: nil, prefix: "")
        let settleSteps = settleOrder(fields)

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
                } else if let relevant = field.relevant {
                    error(relevant.location, "entity field '\(value)' is always relevant: every submission needs a lane")
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
        let actions = [RecordBinding.Action.creates, .edits, .deletes].filter { keys[$0.rawValue] != nil }
        if actions.count > 1 {
            error(
                keys[actions[1].rawValue]!.key.location,
                "a form either creates, edits or deletes a record, not \(actions.map(\.rawValue).joined(separator: " and "))")
        }
        for action in [RecordBinding.Action.creates, .edits, .deletes] {
            guard let node = keys[action.rawValue]?.value, let target = text(node, action.rawValue) else { continue }
            guard Naming.isIdentifier(target, firstLowercase: false) else {
                error(node.location, "'\(action.rawValue)' must name a record type in upper camel case, such as Customer")
                continue
            }
            if action != .creates {
                // The record edited or deleted is the lane: writes of one record go out in order.
                guard let entity, let field = fields.first(where: { $0.name == entity }), case .reference(let to) = field.kind, to == target
                else {
                    error(
                        node.location,
                        "a form that \(action.rawValue) \(target) needs 'entity:' naming a required reference field with 'to: \(target)': the record it \(action.rawValue)"
                    )
                    continue
                }
            }
            binding = RecordBinding(action: action, record: target, location: node.location)
        }

        checkListCreations(fields, changes: binding.flatMap { $0.action == .creates ? nil : "\($0.action.rawValue) \($0.record)" })

        guard let name, let version, let endpoint else { return nil }
        var form = FormDefinition(
            name: name, version: version, summary: summary, endpoint: endpoint, endpointSegments: endpointSegments,
            entity: entity, choiceLists: choices.order.map { choices.named[$0]!.set }, fields: fields,
            sourceName: sourceName, nameLocation: keys["form"]?.value.location ?? root.location, binding: binding)
        form.fieldLocations = fieldLocations
        form.references = references
        form.versionLocation = keys["version"]?.value.location
        form.settleSteps = settleSteps
        for name in form.endpointFields {
            if let relevant = form.field(named: name)?.relevant {
                error(relevant.location, "field '\(name)' fills the endpoint: it is always relevant")
            }
        }
        if let node = keys["upgrades"]?.value { form.upgrades = checkUpgrades(node, version: version, fields: fields) }
        return form
    }

    /// Splits the endpoint into literal text and `{field}` placeholders, reporting each problem
    /// at its column.
}

extension SpecChecker {
    /// Every `creates:` on a list, with the list's path (`findings`, `findings.measurements`).
    static func listCreations(_ fields: [FieldDefinition], prefix: String = "") -> [(path: String, binding: ListRecordBinding)] {
        var found: [(String, ListRecordBinding)] = []
        for field in fields {
            guard case .list(let list) = field.kind else { continue }
            if let binding = list.creates { found.append((prefix + field.name, binding)) }
            found += listCreations(list.fields, prefix: prefix + field.name + ".")
        }
        return found
    }

    /// A list creates records only as a form's own list, in a form that does not edit a record,
    /// and the form fields it copies are the form's own single values.
    /// `changes`: what the form does to a record it does not create ("edits Site"), if anything.
    mutating func checkListCreations(_ fields: [FieldDefinition], changes: String?) {
        for (path, binding) in Self.listCreations(fields) {
            if path.contains(".") {
                error(binding.location, "list '\(path)' is inside another list; only a form's own lists create records")
                continue
            }
            if let changes {
                error(
                    binding.location,
                    "list '\(path)' creates \(binding.record) records, but the form \(changes); a form that edits or deletes a record creates none"
                )
            }
            for name in binding.formFields {
                guard let field = fields.first(where: { $0.name == name }) else {
                    error(
                        binding.location,
                        "'form_fields' of list '\(path)' names '\(name)', which is not a field of the form\(Self.suggestion(name, fields.map(\.name)))"
                    )
                    continue
                }
                if case .list = field.kind {
                    error(
                        binding.location,
                        "'form_fields' of list '\(path)' names list '\(name)'; a record takes the form's single values only")
                }
            }
        }
    }

    /// A record's fields never create records.
    mutating func refuseListCreations(in fields: [FieldDefinition]) {
        for (path, binding) in Self.listCreations(fields) {
            error(binding.location, "list '\(path)' of a record spec cannot create records; 'creates:' belongs on a form's list")
        }
    }
}
