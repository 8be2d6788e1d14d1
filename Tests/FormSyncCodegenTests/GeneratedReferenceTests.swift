import FormSpec
import Foundation
import Testing

@testable import FormSyncCodegen

/// Generated/ is the checked-in output for FormSpecs/; these fail when it is stale.
struct GeneratedReferenceTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func specPaths() -> [String] {
        SpecLoader.specFiles(in: [root.appendingPathComponent("FormSpecs").path])
    }

    @Test(arguments: specPaths())
    func generatedFilesMatchTheCheckedInCopiesByteForByte(_ specPath: String) throws {
        let form = try #require(SpecLoader.check(fileAt: specPath).form)
        let outputs = GeneratedFile.outputs(for: form)
        #expect(outputs.map(\.name).sorted() == [
            GeneratedFile.baseName(ofSpec: form.sourceName) + ".schema.json",
            GeneratedFile.baseName(ofSpec: form.sourceName) + ".swift",
        ])
        for file in outputs {
            let checkedIn = try Data(contentsOf: Self.root.appendingPathComponent("Generated").appendingPathComponent(file.name))
            #expect(checkedIn == Data(file.contents.utf8), "Generated/\(file.name) is stale: run swift run formsync generate FormSpecs --output Generated")
        }
    }

    @Test func generatedFolderHoldsNothingButTheOutputsOfFormSpecsAndTheirCatalog() throws {
        let forms = try Self.specPaths().map { try #require(SpecLoader.check(fileAt: $0).form) }
        let expected = forms.flatMap { GeneratedFile.outputs(for: $0).map(\.name) } + [GeneratedFile.catalogName]
        let present = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Generated").path)
        #expect(Set(present) == Set(expected))
        let catalog = try Data(contentsOf: Self.root.appendingPathComponent("Generated/FormCatalog.swift"))
        #expect(catalog == Data(GeneratedFile.catalog(for: forms).contents.utf8))
        #expect(GeneratedFile.catalog(for: forms).contents.contains("SalesOrder.self,"))
    }

    @Test func theSpecLanguageSchemaCheckedInMatchesTheGenerator() throws {
        let checkedIn = try String(contentsOf: Self.root.appendingPathComponent("FormSpecs/formspec.schema.json"), encoding: .utf8)
        #expect(checkedIn == SpecLanguageSchema.schema().rendered())
    }

    @Test(arguments: specPaths())
    func generatingTwiceFromTwoReadsGivesTheSameBytes(_ specPath: String) throws {
        let first = try #require(SpecLoader.check(fileAt: specPath).form)
        let second = try #require(SpecLoader.check(fileAt: specPath).form)
        #expect(GeneratedFile.outputs(for: first) == GeneratedFile.outputs(for: second))
        #expect(SwiftGenerator.source(for: first) == SwiftGenerator.source(for: first))
    }

    @Test(arguments: specPaths())
    func everyJSONSchemaIsValidJSONDeclaringDraft2020AndTheFormsFields(_ specPath: String) throws {
        let form = try #require(SpecLoader.check(fileAt: specPath).form)
        let text = JSONSchemaGenerator.schema(for: form).rendered()
        let object = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["$schema"] as? String == "https://json-schema.org/draft/2020-12/schema")
        let properties = try #require(object["properties"] as? [String: Any])
        #expect(Set(properties.keys) == Set(form.fields.map(\.name)))
        #expect(object["additionalProperties"] as? Bool == false)
    }
}
