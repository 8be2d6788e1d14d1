import FormSpec
@_spi(Generated) import FormSyncModel
import Foundation

/// Runs checked specs without compiling them: registry entries for forms and records that
/// validate, list placeholders, remap, build endpoints, merge and upgrade exactly as the
/// generated code does (a differential test holds them to it). `formsync serve --specs DIR`
/// serves an app's own specs with it, and a device can run a spec version it was not built with.
public enum SpecInterpreter {
    /// Registries for every form and record of a checked folder of specs.
    public static func registries(_ specs: [CheckedSpec]) -> (forms: FormRegistry, records: RecordRegistry) {
        let records = specs.compactMap(\.record)
        let byName = Dictionary(records.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let forms = specs.compactMap(\.form).map { entry(for: $0, records: byName) }
        return (FormRegistry(entries: forms), RecordRegistry(entries: records.map(entry(for:))))
    }

    /// The registry entry of one form. `records` resolves its `creates:`/`edits:` binding.
    public static func entry(for form: FormDefinition, records: [String: RecordDefinition] = [:]) -> FormRegistry.Entry {
        let fields = form.fields
        let read: @Sendable (Data) throws -> InterpretedObject = { json in
            guard (try? JSONSerialization.jsonObject(with: json)) != nil else {
                throw InterpretedObject.DecodeFailure(path: [], detail: "The given data was not valid JSON.")
            }
            return try InterpretedObject.decode(json, fields: fields)
        }
        var action: RecordAction?
        if let binding = form.binding, let record = records[binding.record] {
            let shared =
                binding.action == .deletes
                ? []
                : form.fields.filter { $0.name != form.entity || binding.action == .creates }.map(\.name).filter {
                    record.field(named: $0) != nil
                }
            let kind: RecordAction.Kind =
                switch binding.action {
                case .creates: .creates
                case .edits: .edits
                case .deletes: .deletes
                }
            action = RecordAction(
                kind: kind, recordType: record.name, keyField: binding.action != .creates ? form.entity : nil, fields: shared)
        }
        let listActions = form.listCreations(records: records).map {
            ListRecordAction(list: $0.list, recordType: $0.record, itemFields: $0.itemFields, formFields: $0.formFields)
        }
        let upgrades = form.upgrades.map { step in
            FormUpgrade(
                from: step.from, renames: Dictionary(step.renames.map { ($0.old, $0.new) }, uniquingKeysWith: { a, _ in a }),
                maps: Dictionary(
                    step.maps.map { ($0.field, Dictionary($0.values.map { ($0.old, $0.new) }, uniquingKeysWith: { a, _ in a })) },
                    uniquingKeysWith: { a, _ in a }),
                drops: step.drops, defaults: Dictionary(step.defaults.map { ($0.field, $0.json) }, uniquingKeysWith: { a, _ in a }))
        }
        return FormRegistry.Entry(
            name: form.name, version: form.version, recordAction: action, upgrades: upgrades,
            decodeAndValidate: { json in try errors(json, read) },
            placeholders: { json in
                var collector = PlaceholderCollector()
                collect(try read(json), into: &collector)
                return collector.ids
            },
            remap: { json, ids in
                let remapped = remap(try read(json), ids)
                return (try remapped.encoded(), endpoint(form, remapped))
            },
            merge: { base, local, server in
                let (b, l, s) = (try read(base), try read(local), try read(server))
                var merge = ThreeWayMerge()
                var merged = s
                for field in fields {
                    let pointer = JSONPointer.appending(JSONPointer.root, field.name)
                    let (bv, lv, sv) = (b.values[field.name], l.values[field.name], s.values[field.name])
                    merged.values[field.name] =
                        field.serverAuthority
                        ? merge.serverAuthority(pointer, base: bv, local: lv, server: sv)
                        : merge.field(
                            pointer, base: bv, local: lv, server: sv,
                            policy: FormSyncModel.ConflictPolicy(rawValue: field.conflict.rawValue) ?? .merge)
                }
                return (try merged.encoded(), merge.conflicts)
            },
            mapFiles: { json, transform in try mapFiles(try read(json), transform).encoded() },
            recalculate: { json in try recalculated(try read(json), steps: form.settleSteps).encoded() }, listRecordActions: listActions)
    }

    /// The registry entry of one record type.
    public static func entry(for record: RecordDefinition) -> RecordRegistry.Entry {
        let fields = record.fields
        let read: @Sendable (Data) throws -> InterpretedObject = { try InterpretedObject.decode($0, fields: fields) }
        let indexed = record.indexes.compactMap { record.field(named: $0) }
        return RecordRegistry.Entry(
            name: record.name, version: record.version, scopeField: record.scope, indexedFields: record.indexes,
            decodeAndValidate: { json in try errors(json, read) },
            indexEntries: { json in
                let object = try read(json)
                return indexed.compactMap { field in
                    object.values[field.name].flatMap(indexValue).map { RecordIndexEntry(field: field.name, value: $0) }
                }
            },
            scopeValue: { RecordRegistry.scopeValue($0, field: record.scope) }, fetchesFilesEagerly: record.fetchesFilesEagerly,
            devicesMayDelete: record.deviceDeletes,
            subscriptionFields: record.subscriptionKeys.map { SubscriptionField($0.name, $0.byWindow ? .window : .values) })
    }

    /// Every rule a payload breaks, or the decoding failure that stops the generated decoder.
    static func errors(_ json: Data, _ read: (Data) throws -> InterpretedObject) throws -> [FieldError] {
        do {
            var validator = FieldValidator()
            validate(try read(json), at: JSONPointer.root, into: &validator)
            return validator.errors
        } catch let failure as InterpretedObject.DecodeFailure {
            return [failure.fieldError]
        }
    }

    static func indexValue(_ value: InterpretedValue) -> String? {
        switch value {
        case .text(let v), .choice(let v): return v
        case .integer(let v): return String(v)
        case .boolean(let v): return v ? "true" : "false"
        case .date(let v): return v.description
        case .reference(let v): return String(v.id)
        default: return nil
        }
    }

    // MARK: What generated code does, field by field

    /// The generated `validate(at:into:)`: the same rules, in the same order.
    static func validate(
        _ object: InterpretedObject, at pointer: String, into validator: inout FieldValidator, parent: InterpretedObject? = nil
    ) {
        let evaluator = ExpressionEvaluator()
        for field in object.fields {
            let p = JSONPointer.appending(pointer, field.name)
            let value = object.values[field.name]
            if let relevant = field.relevant, evaluator.holds(relevant.expression, in: object, parent: parent) != true {
                validator.notRelevant(holdsValue: holdsValue(value), at: p)
                continue
            }
            func require() {
                switch value {
                case .text(let text)?: validator.require(text, at: p)
                case .choices(let list)?: validator.require(list, at: p)
                case .files(let list)?: validator.require(list, at: p)
                case .list(let list)?: validator.require(list, at: p)
                case nil where InterpretedObject.isMultiple(field): validator.require([Int](), at: p)
                case nil: validator.require(String?.none, at: p)
                default: break
                }
            }
            if field.required { require() }
            if !field.requiredIf.isEmpty, field.requiredIf.allSatisfy({ holds($0, in: object) }) { require() }
            switch field.kind {
            case .text(let minLength, let maxLength, let pattern):
                guard case .text(let text)? = value else { break }
                if minLength != nil || maxLength != nil { validator.length(text, min: minLength, max: maxLength, at: p) }
                if let pattern { validator.pattern(text, pattern, at: p) }
            case .integer(let min, let max):
                if min != nil || max != nil, case .integer(let number)? = value { validator.range(number, min: min, max: max, at: p) }
            case .decimal(let min, let max):
                if min != nil || max != nil, case .decimal(let number)? = value {
                    let posix = Locale(identifier: "en_US_POSIX")
                    validator.range(
                        number, min: min.flatMap { Decimal(string: $0, locale: posix) },
                        max: max.flatMap { Decimal(string: $0, locale: posix) }, at: p)
                }
            case .money(let min, let max, let currency):
                if case .money(let money)? = value { validator.money(money, min: min, max: max, currency: currency, at: p) }
            case .multiChoice(_, let count):
                var chosen: [String] = []
                if case .choices(let list)? = value { chosen = list }
                if count.min != nil || count.max != nil { validator.count(chosen.count, min: count.min, max: count.max, at: p) }
                validator.unique(chosen, at: p)
            case .geopoint:
                if case .geopoint(let point)? = value { validator.geopoint(point, at: p) }
            case .reference:
                if case .reference(let ref)? = value { validator.reference(ref, at: p) }
            case .file(_, let rule):
                if rule.multiple {
                    var files: [FileRef] = []
                    if case .files(let list)? = value { files = list }
                    if rule.count.min != nil || rule.count.max != nil {
                        validator.count(files.count, min: rule.count.min, max: rule.count.max, at: p)
                    }
                    for (index, file) in files.enumerated() {
                        validator.file(
                            file, maxBytes: rule.maxBytes, contentTypes: rule.contentTypes, defers: rule.defers, eager: rule.eager,
                            at: JSONPointer.appending(p, index))
                    }
                } else if case .file(let file)? = value {
                    validator.file(
                        file, maxBytes: rule.maxBytes, contentTypes: rule.contentTypes, defers: rule.defers, eager: rule.eager, at: p)
                }
            case .list(let list):
                var items: [InterpretedObject] = []
                if case .list(let values)? = value { items = values }
                if list.count.min != nil || list.count.max != nil {
                    validator.count(items.count, min: list.count.min, max: list.count.max, at: p)
                }
                for (index, item) in items.enumerated() {
                    validate(item, at: JSONPointer.appending(p, index), into: &validator, parent: object)
                }
            case .boolean, .date, .time, .datetime, .choice:
                break
            }
            expressionRules(field, value, object: object, parent: parent, evaluator: evaluator, at: p, into: &validator)
        }
    }

    /// Whether a `required_if` condition holds: the sibling holds one of the values.
    static func holds(_ condition: Condition, in object: InterpretedObject) -> Bool {
        guard let value = object.values[condition.field] else { return false }
        return condition.values.contains { literal in
            switch value {
            case .choice(let v), .text(let v): return v == literal
            case .boolean(let v): return (v ? "true" : "false") == literal
            case .integer(let v): return String(v) == literal
            default: return false
            }
        }
    }

    static func collect(_ object: InterpretedObject, into collector: inout PlaceholderCollector) {
        for field in object.fields {
            switch object.values[field.name] {
            case .reference(let ref)?: collector.add(ref.id)
            case .file(let file)?: collector.add(file.id)
            case .files(let files)?: for file in files { collector.add(file.id) }
            case .list(let items)?: for item in items { collect(item, into: &collector) }
            default: break
            }
        }
    }

    static func remap(_ object: InterpretedObject, _ ids: [Int64: Int64]) -> InterpretedObject {
        var copy = object
        for (name, value) in object.values {
            switch value {
            case .reference(let ref): copy.values[name] = .reference(ref.remapped(ids))
            case .file(let file): copy.values[name] = .file(file.remapped(ids))
            case .files(let files): copy.values[name] = .files(files.map { $0.remapped(ids) })
            case .list(let items): copy.values[name] = .list(items.map { remap($0, ids) })
            default: break
            }
        }
        return copy
    }

    /// The generated `mappingFiles`: every file reference, at any depth, through `transform`.
    static func mapFiles(_ object: InterpretedObject, _ transform: (FileRef) -> FileRef) -> InterpretedObject {
        var copy = object
        for (name, value) in object.values {
            switch value {
            case .file(let file): copy.values[name] = .file(transform(file))
            case .files(let files): copy.values[name] = .files(files.map(transform))
            case .list(let items): copy.values[name] = .list(items.map { mapFiles($0, transform) })
            default: break
            }
        }
        return copy
    }

    /// The generated `endpoint`: each placeholder's value as one percent-encoded segment.
    static func endpoint(_ form: FormDefinition, _ object: InterpretedObject) -> String {
        form.endpointSegments.map { segment in
            switch segment {
            case .literal(let text): return text
            case .field(let name):
                switch object.values[name] {
                case .reference(let ref)?: return PathSegment.encode(String(ref.id))
                case .choice(let v)?, .text(let v)?: return PathSegment.encode(v)
                case .integer(let v)?: return PathSegment.encode(String(v))
                default: return PathSegment.encode(nil)
                }
            }
        }.joined()
    }
}
