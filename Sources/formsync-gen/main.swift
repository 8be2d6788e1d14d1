import FormSpec
import FormSyncCodegen
import Foundation

// The generator the build plugin runs: one spec in, its Swift source out. Diagnostics go to
// standard error as `path:line:column: error: message`, which SwiftPM and Xcode show inline;
// any error fails the build.

let usage = "usage: formsync-gen SPEC.yaml --swift OUTPUT.swift [--schema OUTPUT.schema.json]"
var arguments = Array(CommandLine.arguments.dropFirst())
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
guard let form = checked.form else { exit(1) }

/// Writes only when the contents change, so an unchanged spec does not trigger a recompile.
func write(_ contents: String, to path: String) {
    if let existing = FileManager.default.contents(atPath: path), existing == Data(contents.utf8) { return }
    do {
        try Data(contents.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    } catch {
        FileHandle.standardError.write(Data("\(specPath):1:1: error: cannot write \(path): \(error.localizedDescription)\n".utf8))
        exit(1)
    }
}

for file in GeneratedFile.outputs(for: form) {
    if file.name.hasSuffix(".swift"), let swiftOutput { write(file.contents, to: swiftOutput) }
    if file.name.hasSuffix(".schema.json"), let schemaOutput { write(file.contents, to: schemaOutput) }
}
