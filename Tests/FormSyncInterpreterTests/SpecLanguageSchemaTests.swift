import FormSyncAuthoring
import Foundation
import Testing

@testable import FormSpec

/// The spec language's own schema (what an editor checks a spec with while it is written)
/// accepts every valid spec and refuses what the checker refuses at the level a schema can see.
struct SpecLanguageSchemaTests {
    static let checker = SchemaChecker(schema: SpecLanguageSchema.schema().rendered())

    /// A spec as the JSON an editor's YAML support builds from it (plain scalars typed as YAML 1.2 core).
    static func json(_ node: YAMLNode) -> SchemaChecker.JSON {
        switch node.kind {
        case .scalar(let text, let plain):
            guard plain else { return .string(text) }
            if text == "true" { return .bool(true) }
            if text == "false" { return .bool(false) }
            if ["", "~", "null"].contains(text) { return .null }
            if text.range(of: #"^-?[0-9]+(\.[0-9]+)?$"#, options: .regularExpression) != nil, let number = Decimal(string: text) {
                return .number(number)
            }
            return .string(text)
        case .mapping(let pairs): return .object(pairs.map { ($0.key.scalar ?? "", json($0.value)) })
        case .sequence(let items): return .array(items.map(json))
        case .invalid: return .null
        }
    }

    static func accepts(_ text: String) -> Bool {
        var reader = YAMLReader(path: "spec.yaml")
        guard let root = reader.read(text) else { return false }
        return checker.accepts(json(root))
    }

    @Test(arguments: InterpreterDifferentialTests.folders + ["Tests/Evolution/V4"])
    func everyValidSpecIsAcceptedByTheEditorSchema(_ folder: String) throws {
        for path in SpecLoader.specFiles(in: [InterpreterDifferentialTests.root.appendingPathComponent(folder).path]) {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(Self.accepts(text), "\(path)")
        }
    }

    @Test func theEditorSchemaRefusesWhatItCanSee() {
        let base = "form: A\nversion: 1\nendpoint: /a\nfields:\n"
        #expect(Self.accepts(base + "  a: text\n"))
        #expect(Self.accepts(base + "  a: { type: choice, options: [x, y] }\n"))
        #expect(Self.accepts(base + "  a: { type: choice, options: named }\n"))
        #expect(Self.accepts(base + "  a: { type: photo, max_bytes: 8MB }\n"))
        #expect(Self.accepts(base + "  a: { type: photo, max_bytes: 1024 }\n"))
        #expect(!Self.accepts(base + "  a: texte\n"))
        #expect(!Self.accepts(base + "  a: { type: photo, max_bytes: 8 MB }\n"))
        #expect(!Self.accepts(base + "  a: { type: photo, max_bytes: 0 }\n"))
        #expect(!Self.accepts(base + "  a: { type: choice, options: [] }\n"))
        #expect(!Self.accepts(base + "  a: { type: text, max_length: 3, options: [x] }\n"))
        #expect(!Self.accepts("form: A\nversion: 1\nfields:\n  a: text\n"))  // no endpoint
        #expect(!Self.accepts("record: R\nversion: 1\nendpoint: /r\nfields:\n  a: text\n"))  // a record has no endpoint
        #expect(Self.accepts("record: R\nversion: 1\nscope: a\nfields:\n  a: { type: text, required: true }\n"))
    }
}
