import Foundation

/// The outcome of checking one spec: the checked form when there were no errors, and every
/// diagnostic found, sorted for display.
public struct CheckedSpec: Sendable {
    /// The checked form, or nil when any diagnostic is an error.
    public var form: FormDefinition?
    /// Every problem found, errors and warnings, in reading order.
    public var diagnostics: [Diagnostic]
}

/// The entry point of the spec language: text or a file in, a checked form and diagnostics out.
public enum SpecLoader {
    /// Checks spec text; `path` is used in diagnostics and its last component in the generated
    /// header.
    public static func check(text: String, path: String) -> CheckedSpec {
        var reader = YAMLReader(path: path)
        let root = reader.read(text)
        var checker = SpecChecker(path: path)
        checker.diagnostics = reader.diagnostics
        var form: FormDefinition?
        if let root {
            form = checker.check(root: root, sourceName: (path as NSString).lastPathComponent)
        } else if reader.diagnostics.isEmpty {
            checker.error(SourceLocation(line: 1, column: 1), "the spec is empty; a spec starts with 'form: Name'")
        }
        let diagnostics = checker.diagnostics.sortedForDisplay()
        return CheckedSpec(form: diagnostics.hasErrors ? nil : form, diagnostics: diagnostics)
    }

    /// Reads the YAML only, without checking it as a spec: the baseline of the generator benchmark.
    public static func parseOnly(text: String, path: String) -> Bool {
        var reader = YAMLReader(path: path)
        return reader.read(text) != nil
    }

    /// Reads and checks the spec file at `path`. An unreadable file is a diagnostic, not a throw.
    public static func check(fileAt path: String) -> CheckedSpec {
        guard let data = FileManager.default.contents(atPath: path) else {
            return CheckedSpec(form: nil, diagnostics: [
                Diagnostic(.error, path: path, at: SourceLocation(line: 1, column: 1), "cannot read the file")
            ])
        }
        guard let text = String(data: data, encoding: .utf8) else {
            return CheckedSpec(form: nil, diagnostics: [
                Diagnostic(.error, path: path, at: SourceLocation(line: 1, column: 1), "the file is not UTF-8 text")
            ])
        }
        return check(text: text, path: path)
    }

    /// Checks several specs together: each on its own, then across them, since two specs
    /// declaring the same form would generate the same Swift type.
    public static func check(filesAt paths: [String]) -> [(path: String, spec: CheckedSpec)] {
        var results = paths.map { (path: $0, spec: check(fileAt: $0)) }
        var firstPath: [String: String] = [:]
        for index in results.indices {
            guard let form = results[index].spec.form else { continue }
            if let other = firstPath[form.name] {
                results[index].spec.diagnostics.append(Diagnostic(
                    .error, path: results[index].path, at: form.nameLocation,
                    "form '\(form.name)' is already declared in \(other)"))
                results[index].spec.form = nil
            } else {
                firstPath[form.name] = results[index].path
            }
        }
        return results
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
