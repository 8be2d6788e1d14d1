import FormSyncPattern
import Foundation

/// Checking `upgrades:`: how an older version's document becomes this version's.
extension SpecChecker {
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
}
