import Foundation

/// The outcome of checking one spec: the checked form when there were no errors, and every
/// diagnostic found, sorted for display.
public struct CheckedSpec: Sendable {
    /// The checked form, or nil when any diagnostic is an error or the spec declares a record.
    public var form: FormDefinition?
    /// The checked record (a spec with `record:`), or nil.
    public var record: RecordDefinition?
    /// Every problem found, errors and warnings, in reading order.
    public var diagnostics: [Diagnostic]
    /// The references its fields make (`to:`), found even when the spec has errors, so that a
    /// target no record declares is reported with the spec's other problems, not after them.
    public var references: [ReferenceUse] = []
    /// The record type it declares (`record: Name`), even when the spec has errors: a reference
    /// to a record whose own spec is broken is that spec's problem, not the reference's.
    public var declaredRecord: String?

    public init(form: FormDefinition?, record: RecordDefinition?, diagnostics: [Diagnostic]) {
        self.form = form
        self.record = record
        self.diagnostics = diagnostics
    }
}

/// The entry point of the spec language: text or a file in, a checked form and diagnostics out.
public enum SpecLoader {
    /// Checks spec text; `path` is used in diagnostics and its last component in the generated
    /// header.
    public static func check(text: String, path: String) -> CheckedSpec {
        var reader = YAMLReader(path: path)
        var checker = SpecChecker(path: path)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let root = reader.read(text).map { ValuelessKeys.removed(from: $0, lines: lines) { checker.error($0, $1) } }
        checker.diagnostics = reader.diagnostics + checker.diagnostics
        checker.sourceLines = lines
        var form: FormDefinition?
        var record: RecordDefinition?
        if let root {
            if SpecChecker.isRecordSpec(root) {
                record = checker.checkRecord(root: root, sourceName: (path as NSString).lastPathComponent)
            } else {
                form = checker.check(root: root, sourceName: (path as NSString).lastPathComponent)
            }
        } else if reader.diagnostics.isEmpty {
            checker.error(SourceLocation(line: 1, column: 1), "the spec is empty; a spec starts with 'form: Name' or 'record: Name'")
        }
        let diagnostics = checker.diagnostics.sortedForDisplay()
        let failed = diagnostics.hasErrors
        var checked = CheckedSpec(form: failed ? nil : form, record: failed ? nil : record, diagnostics: diagnostics)
        checked.references = checker.references
        if let root, SpecChecker.isRecordSpec(root), case .mapping(let pairs) = root.kind {
            checked.declaredRecord = pairs.first { $0.key.scalar == "record" }?.value.scalar
        }
        return checked
    }

    /// Reads the YAML only, without checking it as a spec: the baseline of the generator benchmark.
    public static func parseOnly(text: String, path: String) -> Bool {
        var reader = YAMLReader(path: path)
        return reader.read(text) != nil
    }

    /// The largest spec file read (the example specs are a few kilobytes): a bigger one is a
    /// diagnostic, and is not read into memory.
    public static let maxSpecBytes = 4 << 20

    /// Reads and checks the spec file at `path`. An unreadable file is a diagnostic, not a throw;
    /// so is one that is not a regular file (a FIFO would never end) or is over `maxSpecBytes`.
    public static func check(fileAt path: String) -> CheckedSpec {
        func refused(_ message: String) -> CheckedSpec {
            CheckedSpec(
                form: nil, record: nil, diagnostics: [Diagnostic(.error, path: path, at: SourceLocation(line: 1, column: 1), message)])
        }
        let values = try? URL(fileURLWithPath: path).resourceValues(forKeys: [.isRegularFileKey, .fileSizeKey])
        guard let values else { return refused("cannot read the file") }
        guard values.isRegularFile == true else { return refused("not a regular file: a spec is a YAML file") }
        if let size = values.fileSize, size > maxSpecBytes {
            return refused("the file is \(size) bytes; a spec may be at most \(maxSpecBytes)")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else { return refused("cannot read the file") }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: maxSpecBytes + 1) ?? Data() else { return refused("cannot read the file") }
        guard data.count <= maxSpecBytes else { return refused("the file grew past \(maxSpecBytes) bytes as it was read") }
        guard let text = String(data: data, encoding: .utf8) else {
            return CheckedSpec(
                form: nil, record: nil,
                diagnostics: [
                    Diagnostic(.error, path: path, at: SourceLocation(line: 1, column: 1), "the file is not UTF-8 text")
                ])
        }
        return check(text: text, path: path)
    }

    /// Checks several specs together: each on its own, then across them (`crossCheck`).
    public static func check(filesAt paths: [String]) -> [(path: String, spec: CheckedSpec)] {
        var results = paths.map { (path: $0, spec: check(fileAt: $0)) }
        for (index, diagnostic) in crossCheck(results) {
            results[index].spec.diagnostics.append(diagnostic)
            if diagnostic.severity == .error {
                results[index].spec.form = nil
                results[index].spec.record = nil
            }
        }
        return results
    }

    /// The problems only visible across specs, each with the index of the spec it is about:
    /// two specs declaring one type name; a `reference` whose `to:` names no declared record; a
    /// form creating or editing a record that does not exist, or whose fields do not line up
    /// with the record's (same name, same shape; a create supplies every required field of the
    /// record; an edit changes only fields the record has).
    public static func crossCheck(_ specs: [(path: String, spec: CheckedSpec)]) -> [(index: Int, diagnostic: Diagnostic)] {
        var found: [(Int, Diagnostic)] = []
        func error(_ index: Int, _ location: SourceLocation, _ message: String) {
            found.append((index, Diagnostic(.error, path: specs[index].path, at: location, message)))
        }
        var firstPath: [String: (path: String, kind: String)] = [:]
        var records: [String: RecordDefinition] = [:]
        var shadowed: Set<Int> = []
        for (index, (_, spec)) in specs.enumerated() {
            let declared: (name: String, location: SourceLocation, kind: String)?
            if let form = spec.form {
                declared = (form.name, form.nameLocation, "form")
            } else if let record = spec.record {
                declared = (record.name, record.nameLocation, "record")
            } else {
                declared = nil
            }
            guard let declared else { continue }
            if let other = firstPath[declared.name] {
                let what = other.kind == declared.kind ? "" : " as a \(other.kind)"
                error(index, declared.location, "\(declared.kind) '\(declared.name)' is already declared\(what) in \(other.path)")
                shadowed.insert(index)
                continue
            }
            firstPath[declared.name] = (specs[index].path, declared.kind)
            if let record = spec.record { records[record.name] = record }
        }
        let recordNames = records.keys.sorted()
        // Names declared by record specs that have errors of their own: not the reference's fault.
        let brokenRecords = Set(specs.compactMap { $0.spec.record == nil ? $0.spec.declaredRecord : nil })
        for (index, (_, spec)) in specs.enumerated() where !shadowed.contains(index) {
            for use in spec.references where records[use.target] == nil && !brokenRecords.contains(use.target) {
                let hint = SpecChecker.suggestion(use.target, recordNames)
                error(
                    index, use.location,
                    "reference '\(use.field)' points to '\(use.target)', which no record spec declares"
                        + (hint.isEmpty ? "; add a record spec for it (a file starting 'record: \(use.target)') beside this one" : hint))
            }
            if let form = spec.form { crossCheckListCreations(form, index: index, records: records, error: error) }
            guard let form = spec.form, let binding = form.binding else { continue }
            guard let record = records[binding.record] else {
                error(
                    index, binding.location,
                    "form \(form.name) \(binding.action.rawValue) '\(binding.record)', which no record spec declares\(SpecChecker.suggestion(binding.record, recordNames))"
                )
                continue
            }
            if binding.action == .deletes {
                // A delete's other fields (a reason, say) stay with its document.
                if !record.deviceDeletes {
                    error(
                        index, binding.location,
                        "form \(form.name) deletes \(record.name), whose spec does not let devices delete it; add 'device_deletes: true' to \(record.sourceName) if devices may"
                    )
                }
                continue
            }
            for field in form.fields where field.name != form.entity || binding.action == .creates {
                let location = form.fieldLocations[field.name] ?? binding.location
                guard let recordField = record.field(named: field.name) else {
                    if binding.action == .edits {
                        error(
                            index, location,
                            "field '\(field.name)': \(form.name) edits \(record.name), which has no field '\(field.name)'\(SpecChecker.suggestion(field.name, record.fields.map(\.name)))"
                        )
                    }
                    continue
                }
                if !field.kind.sameShape(as: recordField.kind) {
                    error(
                        index, location,
                        "field '\(field.name)' is \(describe(field.kind)) here but \(describe(recordField.kind)) in record \(record.name) (\(record.sourceName)); the shapes must match"
                    )
                }
            }
            if binding.action == .creates {
                for recordField in record.fields where recordField.required {
                    guard let field = form.field(named: recordField.name) else {
                        error(
                            index, binding.location,
                            "record \(record.name) requires '\(recordField.name)', which form \(form.name) does not have")
                        continue
                    }
                    if !field.required {
                        error(
                            index, form.fieldLocations[field.name] ?? binding.location,
                            "field '\(field.name)' must be required: record \(record.name) requires it")
                    }
                }
            }
        }
        return found
    }

    /// A form's lists that create records: the record exists, every field an item shares with
    /// it (by name) and every form field it copies has the record's shape, and every field the
    /// record requires is a required item field or a required form field it copies.
    static func crossCheckListCreations(
        _ form: FormDefinition, index: Int, records: [String: RecordDefinition],
        error: (_ index: Int, _ location: SourceLocation, _ message: String) -> Void
    ) {
        for field in form.fields {
            guard case .list(let list) = field.kind, let creation = list.creates else { continue }
            let at = creation.location
            guard let record = records[creation.record] else {
                error(
                    index, at,
                    "list '\(field.name)' creates '\(creation.record)', which no record spec declares\(SpecChecker.suggestion(creation.record, records.keys.sorted()))"
                )
                continue
            }
            var supplied: [String: FieldDefinition] = [:]
            for item in list.fields {
                guard let recordField = record.field(named: item.name) else { continue }
                supplied[item.name] = item
                if !item.kind.sameShape(as: recordField.kind) {
                    error(
                        index, at,
                        "field '\(field.name).\(item.name)' is \(describe(item.kind)) here but \(describe(recordField.kind)) in record \(record.name) (\(record.sourceName)); the shapes must match"
                    )
                }
            }
            for name in creation.formFields {
                guard let copied = form.field(named: name) else { continue }
                if list.fields.contains(where: { $0.name == name }) {
                    error(index, at, "'\(name)' is both a field of each '\(field.name)' item and a form field it copies; keep one")
                    continue
                }
                guard let recordField = record.field(named: name) else {
                    error(
                        index, at,
                        "'form_fields' copies '\(name)' into \(record.name), which has no field '\(name)'\(SpecChecker.suggestion(name, record.fields.map(\.name)))"
                    )
                    continue
                }
                if !copied.kind.sameShape(as: recordField.kind) {
                    error(
                        index, form.fieldLocations[name] ?? at,
                        "field '\(name)' is \(describe(copied.kind)) here but \(describe(recordField.kind)) in record \(record.name) (\(record.sourceName)); the shapes must match"
                    )
                }
                supplied[name] = copied
            }
            for recordField in record.fields where recordField.required {
                guard let source = supplied[recordField.name] else {
                    error(
                        index, at,
                        "record \(record.name) requires '\(recordField.name)', which neither each '\(field.name)' item nor its 'form_fields' supply"
                    )
                    continue
                }
                if !source.required {
                    error(index, at, "field '\(recordField.name)' must be required: each \(record.name) made from '\(field.name)' needs it")
                }
            }
        }
    }

    static func describe(_ kind: FieldKind) -> String {
        switch kind {
        case .choice(let set), .multiChoice(let set, _):
            return "\(article(kind.typeName)) \(kind.typeName) of [\(set.options.map(\.value).joined(separator: ", "))]"
        case .reference(let to):
            return "a reference to \(to)"
        default:
            return "\(article(kind.typeName)) \(kind.typeName) field"
        }
    }

    /// The spec files named by `paths`: files as given, folders searched (not recursively) for
    /// `*.yaml` and `*.yml`, sorted by name so that output is deterministic.
    public static func specFiles(in paths: [String]) -> [String] {
        var files: [String] = []
        let fm = FileManager.default
        for path in paths {
            var isDirectory: ObjCBool = false
            if fm.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
                let names = (try? fm.contentsOfDirectory(atPath: path)) ?? []
                files += names.filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") }.sorted()
                    .map { (path as NSString).appendingPathComponent($0) }
            } else {
                files.append(path)
            }
        }
        return files
    }
}
