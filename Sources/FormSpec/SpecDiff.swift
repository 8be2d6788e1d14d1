import Foundation

/// One difference between two shapes of a spec, classified by what it means for items already
/// queued on devices under the old shape.
public struct SpecChange: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// Old items still fit the new shape (an optional field or an option added, a bound
        /// widened); the version must still go up, since the shape changed.
        case compatible
        /// Old items may not fit, but the outbox handles it at send time: a bound narrowed or a
        /// new required field without a default (the item is parked for a person to fix), a
        /// conflict policy or authority changed (merges follow the new policy).
        case handledAtSend
        /// Old items would lose or garble data unless an upgrader says what becomes of it: a
        /// field removed or renamed, a type changed, an option removed.
        case breaking
    }

    /// What an upgrader from the old version must say for a breaking change to be covered.
    public enum Need: Sendable, Equatable {
        /// `drop: [field]` or `rename: {field: …}`.
        case dropOrRename(String)
        /// `map: {field: {old: …}}` for each removed option (or `drop: [field]`).
        case map(String, [String])
        /// `default: {field: …}`; without one, old items are parked for a person to fill it.
        case defaultValue(String)
    }

    public var kind: Kind
    /// The field's path (`lines.sku`), or nil for the spec itself.
    public var field: String?
    public var message: String
    public var need: Need?

    public var description: String { message }
}

/// Compares two shapes of one spec, field by field (lists included), and checks the changes
/// against the upgraders the new spec declares.
public enum SpecDiff {
    /// Every difference from `old` to `new`, in field order.
    public static func changes(from old: SpecShape, to new: SpecShape) -> [SpecChange] {
        var changes: [SpecChange] = []
        func shapeChange(_ what: String, _ a: String?, _ b: String?) {
            guard a != b else { return }
            changes.append(SpecChange(kind: .compatible, field: nil, message: "\(what) changed from \(a ?? "none") to \(b ?? "none")"))
        }
        shapeChange("endpoint", old.endpoint, new.endpoint)
        shapeChange("entity", old.entity, new.entity)
        shapeChange("creates", old.creates, new.creates)
        shapeChange("edits", old.edits, new.edits)
        shapeChange("deletes", old.deletes, new.deletes)
        shapeChange("device_deletes", old.deviceDeletes.map { "\($0)" }, new.deviceDeletes.map { "\($0)" })
        shapeChange("scope", old.scope, new.scope)
        subscriptionChange(old.subscribeBy ?? [], new.subscribeBy ?? [], into: &changes)
        shapeChange("index", old.index?.joined(separator: ", "), new.index?.joined(separator: ", "))
        compare(old.fields, new.fields, prefix: "", topLevel: true, into: &changes)
        return changes
    }

    /// `subscribe_by`: a field added to a list that was there is compatible (older apps never
    /// subscribe by it); any other change changes which records apps built before receive, a
    /// warning to act on (no upgrader can cover delivery).
    static func subscriptionChange(_ old: [String], _ new: [String], into changes: inout [SpecChange]) {
        guard old != new else { return }
        let text = { (fields: [String]) in fields.isEmpty ? "none" : fields.joined(separator: ", ") }
        if !old.isEmpty, old.allSatisfy(new.contains) {
            changes.append(
                SpecChange(kind: .compatible, field: nil, message: "subscribe_by changed from \(text(old)) to \(text(new))"))
        } else if old.isEmpty {
            changes.append(
                SpecChange(
                    kind: .handledAtSend, field: nil,
                    message:
                        "subscribe_by changed from none to \(text(new)): records of the type now reach devices only through subscriptions, and apps built before receive none"
                ))
        } else {
            changes.append(
                SpecChange(
                    kind: .handledAtSend, field: nil,
                    message:
                        "subscribe_by changed from \(text(old)) to \(text(new)): apps built before subscribe by fields the server no longer takes"
                ))
        }
    }

    static func compare(
        _ old: [SpecShape.FieldShape], _ new: [SpecShape.FieldShape], prefix: String, topLevel: Bool, into changes: inout [SpecChange]
    ) {
        let newByName = Dictionary(new.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let oldByName = Dictionary(old.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for field in old where newByName[field.name] == nil {
            let path = prefix + field.name
            changes.append(
                SpecChange(
                    kind: .breaking, field: path, message: "field '\(path)' was removed (or renamed): queued items still hold it",
                    need: topLevel ? .dropOrRename(field.name) : nil))
        }
        for field in new {
            let path = prefix + field.name
            guard let before = oldByName[field.name] else {
                if field.required {
                    changes.append(
                        SpecChange(
                            kind: .handledAtSend, field: path,
                            message: field.relevant.map {
                                "required field '\(path)' was added, relevant when \($0): queued items where it applies lack it"
                            } ?? "required field '\(path)' was added: queued items lack it",
                            need: topLevel ? .defaultValue(field.name) : nil))
                } else {
                    changes.append(SpecChange(kind: .compatible, field: path, message: "optional field '\(path)' was added"))
                }
                continue
            }
            compare(before, field, path: path, topLevel: topLevel, into: &changes)
        }
    }

    static func compare(
        _ old: SpecShape.FieldShape, _ new: SpecShape.FieldShape, path: String, topLevel: Bool, into changes: inout [SpecChange]
    ) {
        func add(_ kind: SpecChange.Kind, _ message: String, _ need: SpecChange.Need? = nil) {
            changes.append(SpecChange(kind: kind, field: path, message: "field '\(path)': " + message, need: topLevel ? need : nil))
        }
        guard old.type == new.type, old.multiple == new.multiple else {
            add(.breaking, "its type changed from \(old.type) to \(new.type): queued values would not read", .dropOrRename(new.name))
            return
        }
        if old.required != new.required {
            if new.required {
                add(.handledAtSend, "became required: queued items may lack it", .defaultValue(new.name))
            } else {
                add(.compatible, "is no longer required")
            }
        }
        if old.requiredIf != new.requiredIf {
            add(
                .handledAtSend,
                "required_if changed from \(old.requiredIf?.joined(separator: ", ") ?? "none") to \(new.requiredIf?.joined(separator: ", ") ?? "none")"
            )
        }
        if old.conflict != new.conflict {
            add(
                .handledAtSend,
                "conflict policy changed from \(old.conflict ?? "merge") to \(new.conflict ?? "merge"): queued edits merge by the new one")
        }
        if old.authority != new.authority {
            add(
                .handledAtSend,
                "authority changed from \(old.authority ?? "none") to \(new.authority ?? "none"): queued edits merge by the new rule")
        }
        if old.creates != new.creates {
            // The payload is the same; what the server makes of it is not: records from now on.
            add(
                .compatible,
                new.creates.map { "its items now create records (\($0))" + (old.creates.map { " instead of \($0)" } ?? "") }
                    ?? "its items no longer create records (\(old.creates ?? ""))")
        }
        if old.to != new.to {
            add(
                .breaking, "now refers to \(new.to ?? "?") instead of \(old.to ?? "?"): queued ids point elsewhere", .dropOrRename(new.name)
            )
        }
        if old.currency != new.currency { bound("currency", old.currency, new.currency, narrowed: new.currency != nil) }
        if old.pattern != new.pattern { bound("pattern", old.pattern, new.pattern, narrowed: new.pattern != nil) }
        lower("min_length", old.minLength, new.minLength)
        upper("max_length", old.maxLength, new.maxLength)
        lowerText("min", old.min, new.min)
        upperText("max", old.max, new.max)
        lower("min_count", old.minCount, new.minCount)
        upper("max_count", old.maxCount, new.maxCount)
        upper64("max_bytes", old.maxBytes, new.maxBytes)
        let oldTypes = Set(old.contentTypes ?? [])
        let newTypes = Set(new.contentTypes ?? [])
        if oldTypes != newTypes {
            let narrowed = !newTypes.isEmpty && (oldTypes.isEmpty || !oldTypes.isSubset(of: newTypes))
            bound("content_types", old.contentTypes?.joined(separator: ", "), new.contentTypes?.joined(separator: ", "), narrowed: narrowed)
        }
        let oldOptions = old.options ?? []
        let newOptions = new.options ?? []
        let removed = oldOptions.filter { !newOptions.contains($0) }
        let added = newOptions.filter { !oldOptions.contains($0) }
        if !added.isEmpty {
            add(.compatible, "option\(added.count == 1 ? "" : "s") \(added.map { "'\($0)'" }.joined(separator: ", ")) added")
        }
        if !removed.isEmpty {
            add(
                .breaking,
                "option\(removed.count == 1 ? "" : "s") \(removed.map { "'\($0)'" }.joined(separator: ", ")) removed: queued items may hold \(removed.count == 1 ? "it" : "them")",
                .map(new.name, removed))
        }
        expression(
            "relevant", old.relevant, new.relevant, then: "a value in a field that no longer applies is cleared when the item is upgraded")
        expression("constraint", old.constraint, new.constraint, then: "queued values that break it are parked for a person")
        expression("calculate", old.calculate, new.calculate, then: "queued items are recalculated when they are upgraded")
        expression("choice_filter", old.choiceFilter, new.choiceFilter, then: "queued choices it no longer offers are parked for a person")
        if let oldFields = old.fields, let newFields = new.fields {
            compare(oldFields, newFields, prefix: path + ".", topLevel: false, into: &changes)
        }

        /// An expression added or changed is handled at send; one removed is compatible.
        func expression(_ key: String, _ a: String?, _ b: String?, then consequence: String) {
            guard a != b else { return }
            switch (a, b) {
            case (nil, let b?): add(.handledAtSend, "\(key) '\(b)' added: \(consequence)")
            case (let a?, nil): add(.compatible, "\(key) '\(a)' removed")
            default: add(.handledAtSend, "\(key) changed from '\(a ?? "")' to '\(b ?? "")': \(consequence)")
            }
        }

        func bound(_ rule: String, _ a: String?, _ b: String?, narrowed: Bool) {
            let text = "\(rule) changed from \(a ?? "none") to \(b ?? "none")"
            add(narrowed ? .handledAtSend : .compatible, narrowed ? text + ": queued values that break it are parked for a person" : text)
        }
        func lower(_ rule: String, _ a: Int?, _ b: Int?) {
            guard a != b else { return }
            bound(rule, a.map(String.init), b.map(String.init), narrowed: b != nil && (a == nil || b! > a!))
        }
        func upper(_ rule: String, _ a: Int?, _ b: Int?) {
            guard a != b else { return }
            bound(rule, a.map(String.init), b.map(String.init), narrowed: b != nil && (a == nil || b! < a!))
        }
        func upper64(_ rule: String, _ a: Int64?, _ b: Int64?) {
            guard a != b else { return }
            bound(rule, a.map(String.init), b.map(String.init), narrowed: b != nil && (a == nil || b! < a!))
        }
        func number(_ text: String?) -> Decimal? { text.flatMap { Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX")) } }
        func lowerText(_ rule: String, _ a: String?, _ b: String?) {
            guard number(a) != number(b) else { return }
            bound(rule, a, b, narrowed: number(b) != nil && (number(a) == nil || number(b)! > number(a)!))
        }
        func upperText(_ rule: String, _ a: String?, _ b: String?) {
            guard number(a) != number(b) else { return }
            bound(rule, a, b, narrowed: number(b) != nil && (number(a) == nil || number(b)! < number(a)!))
        }
    }

    /// The changes from each released version to the next (and from the newest to the spec),
    /// as diagnostics at the spec: a shape change without a version bump, or a breaking change
    /// no upgrader covers, is an error; every other change is a warning saying what it means
    /// for queued items.
    public static func check(_ spec: CheckedSpec, path: String, lock: SpecLock) -> [Diagnostic] {
        let current: SpecShape
        let location: SourceLocation
        var steps: [UpgradeStep] = []
        var fieldLocations: [String: SourceLocation] = [:]
        if let form = spec.form {
            current = SpecShape(form: form)
            location = form.versionLocation ?? form.nameLocation
            steps = form.upgrades
            fieldLocations = form.fieldLocations
        } else if let record = spec.record {
            current = SpecShape(record: record)
            location = record.versionLocation ?? record.nameLocation
            fieldLocations = record.fieldLocations
        } else {
            return []
        }
        var history = lock.versions(of: current.name).filter { $0.version < current.version }
        history.append((current.version, current))
        var diagnostics: [Diagnostic] = []
        for (older, newer) in zip(history, history.dropFirst()) {
            let step = steps.first { $0.from == older.version }
            let isCurrent = newer.version == current.version
            for change in changes(from: older.shape, to: newer.shape) {
                let at = isCurrent ? change.field.flatMap { fieldLocations[$0] } ?? location : location
                let range = "version \(older.version) → \(newer.version)"
                switch (change.kind, change.need) {
                case (.breaking, let need?):
                    if let step, covers(step, need) {
                        diagnostics.append(
                            Diagnostic(
                                .warning, path: path, at: at,
                                "\(range): \(change.message); covered by the upgrade from version \(older.version)"))
                    } else {
                        diagnostics.append(
                            Diagnostic(.error, path: path, at: at, "\(range): \(change.message); \(advice(need, from: older.version))"))
                    }
                case (.breaking, nil):
                    diagnostics.append(
                        Diagnostic(
                            .error, path: path, at: at,
                            "\(range): \(change.message); upgraders work on top-level fields: keep the old list item field, or move the data to a new list field"
                        ))
                case (.handledAtSend, .defaultValue(let field)?) where step?.defaults.contains { $0.field == field } == true:
                    diagnostics.append(
                        Diagnostic(.warning, path: path, at: at, "\(range): \(change.message); filled by the upgrade's default"))
                case (.handledAtSend, .defaultValue(let field)?) where step?.renames.contains { $0.new == field } == true:
                    diagnostics.append(
                        Diagnostic(.warning, path: path, at: at, "\(range): \(change.message); filled by the upgrade's rename"))
                case (.handledAtSend, .defaultValue?):
                    diagnostics.append(
                        Diagnostic(
                            .warning, path: path, at: at,
                            "\(range): \(change.message); queued items will be parked for a person to fill it (or add upgrades: { \(older.version): { default: { \(change.field ?? ""): … } } })"
                        ))
                case (.handledAtSend, _):
                    diagnostics.append(Diagnostic(.warning, path: path, at: at, "\(range): \(change.message)"))
                case (.compatible, _):
                    diagnostics.append(Diagnostic(.warning, path: path, at: at, "\(range): compatible: \(change.message)"))
                }
            }
        }
        return diagnostics
    }

    /// `formsync diff OLD NEW`: each spec of `new` against the spec of the same name in `old`
    /// (taken as its released version), and every spec of `old` that is gone.
    public static func compare(
        old: [(path: String, spec: CheckedSpec)], new: [(path: String, spec: CheckedSpec)], oldName: String
    ) -> [Diagnostic] {
        func shape(_ spec: CheckedSpec) -> SpecShape? { spec.form.map { SpecShape(form: $0) } ?? spec.record.map { SpecShape(record: $0) } }
        var before: [String: (path: String, shape: SpecShape)] = [:]
        for (path, spec) in old {
            if let shape = shape(spec) { before[shape.name] = (path, shape) }
        }
        var diagnostics: [Diagnostic] = []
        var seen: Set<String> = []
        for (path, spec) in new {
            guard let current = shape(spec) else { continue }
            seen.insert(current.name)
            guard let previous = before[current.name] else { continue }
            var lock = SpecLock()
            lock.specs[current.name] = [String(previous.shape.version): previous.shape]
            diagnostics += lock.updated(with: [(path, spec)], releasedIn: oldName).diagnostics.map(\.diagnostic)
            diagnostics += check(spec, path: path, lock: lock)
        }
        for (name, previous) in before.sorted(by: { $0.key < $1.key }) where !seen.contains(name) {
            diagnostics.append(
                Diagnostic(
                    .error, path: previous.path, at: SourceLocation(line: 1, column: 1),
                    "\(previous.shape.kind) \(name) was removed: items queued under it could no longer be sent; keep the spec"))
        }
        return diagnostics.sortedForDisplay()
    }

    /// `formsync diff --lock`: the specs against every version the lock released.
    public static func compare(lock: SpecLock, specs: [(path: String, spec: CheckedSpec)]) -> [Diagnostic] {
        var diagnostics = lock.updated(with: specs).diagnostics.map(\.diagnostic)
        for (path, spec) in specs { diagnostics += check(spec, path: path, lock: lock) }
        return diagnostics.sortedForDisplay()
    }

    static func covers(_ step: UpgradeStep, _ need: SpecChange.Need) -> Bool {
        switch need {
        case .dropOrRename(let field):
            return step.handles(field)
        case .map(let field, let removed):
            if step.drops.contains(field) { return true }
            let mapped = Set(step.maps.first { $0.field == field }?.values.map(\.old) ?? [])
            return Set(removed).isSubset(of: mapped)
        case .defaultValue(let field):
            return step.defaults.contains { $0.field == field }
        }
    }

    static func advice(_ need: SpecChange.Need, from version: Int) -> String {
        switch need {
        case .dropOrRename(let field):
            return "say what becomes of it: upgrades: { \(version): { rename: { \(field): new_name } } } or { drop: [\(field)] }"
        case .map(let field, let removed):
            return
                "map the old values: upgrades: { \(version): { map: { \(field): { \(removed.map { "\($0): …" }.joined(separator: ", ")) } } } }"
        case .defaultValue(let field):
            return "give it a default: upgrades: { \(version): { default: { \(field): … } } }"
        }
    }
}
