import FormSpec
import FormSyncCodegen
import FormSyncCommandLine
import Foundation

// The generator the build plugin runs: once per target, every spec in, each spec's Swift source
// and the catalog out (one process per target, not per spec: a process start costs more than
// generating a spec). Diagnostics go to standard error as `path:line:column: error: message`,
// which SwiftPM and Xcode show inline; any error fails the build.

let usage = """
    usage: formsync-gen --target OUTPUT-FOLDER SPEC.yaml...
           formsync-gen SPEC.yaml --swift OUTPUT.swift [--schema OUTPUT.schema.json]
           formsync-gen --catalog OUTPUT.swift SPEC.yaml...
           formsync-gen generate PATH... --output DIR [--check]   (as `formsync generate`)
    """
var arguments = Array(CommandLine.arguments.dropFirst())

// The command plugin's `generate-formsync` runs this, so that it builds the generator only.
if arguments.first == "generate" {
    do {
        exit(try GenerateCommand.run(Array(arguments.dropFirst())))
    } catch let error as UsageError {
        printError("formsync-gen generate: \(error.message) (see formsync generate --help)")
        exit(2)
    } catch {
        printError("formsync-gen generate: \(error)")
        exit(1)
    }
}

/// Writes only when the contents change, so an unchanged spec does not trigger a recompile.
/// Replaced whole (a temporary file renamed over it) but not synced to disk: the output is
/// derived, and a file a crash left short differs from what the next build generates, which
/// then rewrites it.
func write(_ contents: String, to path: String, reportingAgainst spec: String) {
    let data = Data(contents.utf8)
    if let existing = FileManager.default.contents(atPath: path), existing == data { return }
    do {
        try DerivedFile.replace(path, with: data)
    } catch {
        FileHandle.standardError.write(Data("\(spec):1:1: error: \(WriteFailure(path: path, error))\n".utf8))
        exit(1)
    }
}

/// Checks across `specs` (an unknown `to:`, a form whose fields do not line up with its
/// record's), prints those problems and, when none is an error, writes the catalog of the forms
/// and records that check. False when it found an error.
func writeCatalog(_ specs: [(path: String, spec: CheckedSpec)], to output: String) -> Bool {
    let across = SpecLoader.crossCheck(specs)
    for (_, diagnostic) in across {
        FileHandle.standardError.write(Data("\(diagnostic)\n".utf8))
    }
    if across.contains(where: { $0.diagnostic.severity == .error }) { return false }
    let catalog = GeneratedFile.catalog(for: specs.compactMap(\.spec.form), records: specs.compactMap(\.spec.record))
    write(catalog.contents, to: output, reportingAgainst: specs.first?.path ?? output)
    return true
}

if arguments.first == "--target" || arguments.first == "--catalog" {
    guard arguments.count >= 2 else {
        FileHandle.standardError.write(Data("\(usage)\n".utf8))
        exit(2)
    }
    let whole = arguments.first == "--target"
    let paths = Array(arguments.dropFirst(2))
    let specs = paths.map { (path: $0, spec: SpecLoader.check(fileAt: $0)) }
    guard whole else {
        // `--catalog`: each spec's own command reports its own diagnostics.
        exit(writeCatalog(specs, to: arguments[1]) ? 0 : 1)
    }
    // `--target`: every spec's diagnostics, the checks across specs, then every output.
    let folder = arguments[1]
    var failed = false
    for (_, checked) in specs {
        for diagnostic in checked.diagnostics {
            FileHandle.standardError.write(Data("\(diagnostic)\n".utf8))
            if diagnostic.severity == .error { failed = true }
        }
        if checked.form == nil && checked.record == nil { failed = true }
    }
    let catalog = (folder as NSString).appendingPathComponent("FormCatalog.swift")
    guard !failed, writeCatalog(specs, to: catalog) else { exit(1) }
    for (path, checked) in specs {
        let base = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        if let file = GeneratedFile.swiftSource(for: checked) {
            write(file.contents, to: (folder as NSString).appendingPathComponent(base + ".swift"), reportingAgainst: path)
        }
    }
    exit(0)
}

var specPath: String?
var swiftOutput: String?
var schemaOutput: String?
while !arguments.isEmpty {
    let argument = arguments.removeFirst()
    switch argument {
    case "--swift" where !arguments.isEmpty: swiftOutput = arguments.removeFirst()
    case "--schema" where !arguments.isEmpty: schemaOutput = arguments.removeFirst()
    case "--help", "-h":
        print(usage)
        exit(0)
    default:
        if specPath == nil && !argument.hasPrefix("-") {
            specPath = argument
        } else {
            FileHandle.standardError.write(Data("formsync-gen: unexpected argument '\(argument)'\n\(usage)\n".utf8))
            exit(2)
        }
    }
}
guard let specPath, swiftOutput != nil || schemaOutput != nil else {
    FileHandle.standardError.write(Data("\(usage)\n".utf8))
    exit(2)
}

let checked = SpecLoader.check(fileAt: specPath)
for diagnostic in checked.diagnostics {
    FileHandle.standardError.write(Data("\(diagnostic)\n".utf8))
}
guard checked.form != nil || checked.record != nil else { exit(1) }

for file in GeneratedFile.outputs(for: checked) {
    if file.name.hasSuffix(".swift"), let swiftOutput { write(file.contents, to: swiftOutput, reportingAgainst: specPath) }
    if file.name.hasSuffix(".schema.json"), let schemaOutput { write(file.contents, to: schemaOutput, reportingAgainst: specPath) }
}
