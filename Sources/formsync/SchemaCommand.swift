import FormSyncAuthoring
import FormSyncCommandLine

/// `formsync schema`: the JSON Schema of the spec language.
enum SchemaCommand {
    static let help = """
        usage: formsync schema

        Prints the JSON Schema (draft 2020-12) of the spec language, for editors' YAML support.
        A copy is checked in as FormSpecs/formspec.schema.json.
        """

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, flags: ["--help", "-h"])
        if !args.flags.isEmpty {
            print(help)
            return 0
        }
        guard args.positionals.isEmpty else { throw UsageError("schema takes no arguments") }
        print(SpecLanguageSchema.schema().rendered(), terminator: "")
        return 0
    }
}
