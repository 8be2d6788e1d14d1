import FormSyncPattern
import Foundation

/// What each field type's keys say: one function per type, called by `checkField`.
extension SpecChecker {
    /// Where a field is declared and what it says, as the type functions need it.
    struct FieldSite {
        var name: String
        var display: String
        var type: String
        var key: YAMLNode
        var keys: [String: Pair]
    }

    /// A text field: its length bounds and its pattern (kept without redundant ^ and $).
    mutating func textKind(_ site: FieldSite) -> FieldKind? {
        let keys = site.keys
        let minLength = keys["min_length"].flatMap { nonNegative($0.value, "min_length") }
        let maxLength = keys["max_length"].flatMap { positive($0.value, "max_length") }
        orderCheck(minLength, maxLength, keys["max_length"], "max_length", "min_length")
        var pattern: String?
        if let node = keys["pattern"]?.value, let value = text(node, "pattern") {
            do {
                // Kept without a leading ^ or trailing $, which mean nothing more.
                let compiled = try Pattern(value)
                pattern = compiled.body
                // A large pattern is bounded by its field's max_length, or it is refused: a long
                // value would cost a server's worker seconds (Pattern.workBudget).
                let steps = compiled.instructionCount
                let bounded =
                    maxLength.map { length in
                        let (work, overflow) = steps.multipliedReportingOverflow(by: length)
                        return !overflow && work <= Pattern.workBudget
                    } ?? false
                if steps > Pattern.unboundedInstructions && !bounded {
                    self.error(
                        node.location,
                        "pattern '\(value)' is \(steps) steps long: give the field a max_length of at most \(Pattern.workBudget / steps) (a longer value would take too long to check), or use smaller bounds"
                    )
                }
            } catch {
                for problem in error.reasons { self.error(node.location, "pattern '\(value)': \(problem)") }
            }
        }
        return .text(minLength: minLength, maxLength: maxLength, pattern: pattern)
    }

    /// An integer field: its bounds.
    mutating func integerKind(_ site: FieldSite) -> FieldKind? {
        let keys = site.keys
        let min = keys["min"].flatMap { integer($0.value, "min") }
        let max = keys["max"].flatMap { integer($0.value, "max") }
        orderCheck(min, max, keys["max"], "max", "min")
        return .integer(min: min, max: max)
    }

    /// A decimal field: its bounds, compared as decimals.
    mutating func decimalKind(_ site: FieldSite) -> FieldKind? {
        let keys = site.keys
        let min = keys["min"].flatMap { decimal($0.value, "min") }
        let max = keys["max"].flatMap { decimal($0.value, "max") }
        if let min, let max, let node = keys["max"]?.value,
            let a = Decimal(string: min, locale: Locale(identifier: "en_US_POSIX")),
            let b = Decimal(string: max, locale: Locale(identifier: "en_US_POSIX")), a > b
        {
            error(node.location, "max (\(max)) is less than min (\(min))")
        }
        return .decimal(min: min, max: max)
    }

    /// A choice or multi-choice field: its options, inline or a named list.
    mutating func choiceKind(_ site: FieldSite, scope: inout TypeScope, named: [String: ChoiceSet], used: inout Set<String>) -> FieldKind? {
        let (keys, key, name, display, type) = (site.keys, site.key, site.name, site.display, site.type)
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
            guard let (options, columns) = options(node, context: "field '\(display)'") else { return nil }
            let typeName = Naming.upperCamel(name)
            guard declare(typeName, in: &scope, at: key.location, what: "the options of field '\(display)'") else { return nil }
            set = ChoiceSet(specName: name, typeName: typeName, isNamed: false, options: options, columns: columns)
        }
        if type == "choice" {
            return .choice(set)
        } else {
            return .multiChoice(set, counts(keys))
        }
    }

    /// A money field: its bounds, its currency, and whether the server is the authority.
    mutating func moneyKind(_ site: FieldSite, serverAuthority: inout Bool) -> FieldKind? {
        let keys = site.keys
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
        return .money(min: min.map(Int64.init), max: max.map(Int64.init), currency: currency)
    }

    /// A reference field: the record type it points to (checked across specs).
    mutating func referenceKind(_ site: FieldSite) -> FieldKind? {
        let (keys, key, display) = (site.keys, site.key, site.display)
        guard let node = keys["to"]?.value else {
            error(key.location, "reference field '\(display)' needs 'to': the entity it refers to, such as Customer")
            return nil
        }
        guard let target = text(node, "to") else { return nil }
        guard Naming.isIdentifier(target, firstLowercase: false) else {
            error(node.location, "'to' must name an entity type in upper camel case, such as Customer")
            return nil
        }
        references.append(ReferenceUse(field: display, target: target, location: node.location))
        return .reference(to: target)
    }

    /// A file field (photo, signature, audio, video, file): counts, size, types, deferral, download.
    mutating func fileKind(_ site: FieldSite) -> FieldKind? {
        let (keys, type) = (site.keys, site.type)
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
        return .file(
            fileKind,
            FileRule(multiple: multiple, count: count, maxBytes: maxBytes, contentTypes: contentTypes, defers: defers, eager: eager))
    }

    /// A list field: its item type and the item's own fields, nested at most `maxListDepth` deep.
    mutating func listKind(_ site: FieldSite, scope: inout TypeScope, named: [String: ChoiceSet], used: inout Set<String>) -> FieldKind? {
        let (keys, key, name, display) = (site.keys, site.key, site.name, site.display)
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
        var list = ListDefinition(itemTypeName: itemName, fields: itemFields, count: counts(keys))
        if let node = keys["creates"]?.value { list.creates = listCreation(node, display: display) }
        return .list(list)
    }

    /// `creates:` on a list: a record type name, or `{ record: Name, form_fields: [a, b] }`.
    /// Where it may be written, and whether the record fits, is checked with the form and
    /// across specs.
    mutating func listCreation(_ node: YAMLNode, display: String) -> ListRecordBinding? {
        var record: (String, SourceLocation)?
        var formFields: [String] = []
        if case .scalar = node.kind {
            if let name = text(node, "creates") { record = (name, node.location) }
        } else if let pairs = mapping(node, "creates") {
            let keys = keyed(pairs, allowed: ["record", "form_fields"], context: "in 'creates' of list '\(display)'")
            if let value = keys["record"]?.value, let name = text(value, "record") { record = (name, value.location) }
            if let value = keys["form_fields"]?.value { formFields = stringList(value, "form_fields").map(\.value) }
            if keys["record"] == nil {
                error(node.location, "'creates' of list '\(display)' needs 'record': the record type each item creates")
            }
        }
        guard let (name, location) = record else { return nil }
        guard Naming.isIdentifier(name, firstLowercase: false) else {
            error(location, "'creates' must name a record type in upper camel case, such as Finding")
            return nil
        }
        return ListRecordBinding(record: name, formFields: formFields, location: location)
    }
}
