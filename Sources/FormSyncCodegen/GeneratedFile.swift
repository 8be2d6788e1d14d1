import FormSpec

/// One file the generator writes for a spec: its name and exact contents.
public struct GeneratedFile: Sendable, Equatable {
    public var name: String
    public var contents: String

    /// The files for a checked form: `<spec name>.swift` and `<spec name>.schema.json`, named
    /// after the spec file so the build plugin knows the names before the spec is read.
    public static func outputs(for form: FormDefinition) -> [GeneratedFile] {
        let base = baseName(ofSpec: form.sourceName)
        return [
            GeneratedFile(name: base + ".swift", contents: SwiftGenerator.source(for: form)),
            GeneratedFile(name: base + ".schema.json", contents: JSONSchemaGenerator.schema(for: form).rendered()),
        ]
    }

    /// `DeliveryConfirmation.yaml` gives `DeliveryConfirmation`.
    public static func baseName(ofSpec fileName: String) -> String {
        for suffix in [".yaml", ".yml"] where fileName.hasSuffix(suffix) {
            return String(fileName.dropLast(suffix.count))
        }
        return fileName
    }
}
