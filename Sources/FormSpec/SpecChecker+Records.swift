import FormSyncPattern
import Foundation

/// Checking a record spec (`record: Name`): its scope, its indexed fields.
extension SpecChecker {
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
        refuseListCreations(in: fields)
        for (_, keys) in pendingExpressions {
            for (name, pair) in keys {
                error(pair.key.location, "'\(name)' belongs to a form's field: a record holds what forms sent, it asks nothing")
            }
        }
        pendingExpressions = [:]
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
        let deviceDeletes = keys["device_deletes"].flatMap { bool($0.value, "device_deletes") } ?? false
        var subscribeBy: [String] = []
        if let node = keys["subscribe_by"]?.value {
            let items = stringList(node, "subscribe_by")
            if items.isEmpty, case .sequence(let list) = node.kind, list.isEmpty {
                error(node.location, "subscribe_by lists no field; leave the key out for records every device receives")
            }
            for item in items {
                guard let field = fields.first(where: { $0.name == item.value }) else {
                    error(item.location, "subscribe_by '\(item.value)' names no field\(suggestion(item.value, fields.map(\.name)))")
                    continue
                }
                if !field.kind.isSubscribable {
                    error(
                        item.location,
                        "subscribe_by '\(item.value)' is \(article(field.kind.typeName)) \(field.kind.typeName) field; devices subscribe by a date (a window) or by text, choice, reference and integer fields (a list of values)"
                    )
                } else if !field.required {
                    error(
                        item.location,
                        "subscribe_by '\(item.value)' must be required: a record without it would match no subscription and reach no device"
                    )
                } else if subscribeBy.contains(item.value) {
                    error(item.location, "subscribe_by '\(item.value)' is listed twice")
                } else if subscribeBy.count == Self.maxSubscriptionFields {
                    error(
                        item.location,
                        "subscribe_by '\(item.value)' is one too many: a record is subscribed by at most \(Self.maxSubscriptionFields) fields"
                    )
                } else {
                    subscribeBy.append(item.value)
                }
            }
        }
        guard let name, let version else { return nil }
        var record = RecordDefinition(
            name: name, version: version, summary: summary, choiceLists: choices.order.map { choices.named[$0]!.set }, fields: fields,
            scope: scopeField, indexes: indexes, sourceName: sourceName, nameLocation: keys["record"]?.value.location ?? root.location,
            fieldLocations: fieldLocations, references: references, versionLocation: keys["version"]?.value.location)
        record.deviceDeletes = deviceDeletes
        record.subscribeBy = subscribeBy
        return record
    }
}
