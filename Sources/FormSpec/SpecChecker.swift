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
    /// The expression keys of each field (by its dotted path), checked once the form's fields are known.
    var pendingExpressions: [String: [String: Pair]] = [:]
    /// The spec's lines, to place a mistake inside an expression at its column.
    var sourceLines: [Substring] = []

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

    static let topLevelKeys = [
        "form", "version", "description", "endpoint", "entity", "creates", "edits", "deletes", "choices", "fields", "upgrades",
    ]
    /// How many fields a record may index: the device stores one key column per indexed field.
    static let maxIndexedFields = 8
    /// The most fields a record may be subscribed by.
    static let maxSubscriptionFields = 8

    static let recordKeys = ["record", "version", "description", "scope", "index", "device_deletes", "subscribe_by", "choices", "fields"]
    static let commonFieldKeys = [
        "type", "description", "label", "required", "required_if", "conflict", "relevant", "constraint", "constraint_message", "calculate",
    ]
    static let ruleKeys: [String: [String]] = [
        "text": ["min_length", "max_length", "pattern"],
        "integer": ["min", "max"],
        "decimal": ["min", "max"],
        "boolean": [], "date": [], "time": [], "datetime": [], "geopoint": [],
        "choice": ["options", "choice_filter"],
        "multi_choice": ["options", "min_count", "max_count", "choice_filter"],
        "money": ["min", "max", "currency", "authority"],
        "reference": ["to"],
        "photo": fileKeys, "signature": fileKeys, "audio": fileKeys, "video": fileKeys, "file": fileKeys,
        "list": ["fields", "item", "min_count", "max_count", "creates"],
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
                guard let (options, columns) = options(value, context: "choice list '\(listName)'") else { continue }
                if declare(typeName, in: &scope, at: key.location, what: "choice list '\(listName)'") {
                    namedChoices[listName] = (
                        ChoiceSet(specName: listName, typeName: typeName, isNamed: true, options: options, columns: columns), key.location
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
