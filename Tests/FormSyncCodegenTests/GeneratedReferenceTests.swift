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
        let spec = SpecLoader.check(fileAt: specPath)
        #expect(!spec.diagnostics.hasErrors)
        let outputs = GeneratedFile.outputs(for: spec)
        let base = GeneratedFile.baseName(ofSpec: (specPath as NSString).lastPathComponent)
        #expect(outputs.map(\.name).sorted() == [base + ".schema.json", base + ".swift"])
        for file in outputs {
            let checkedIn = try Data(contentsOf: Self.root.appendingPathComponent("Generated").appendingPathComponent(file.name))
            #expect(
                checkedIn == Data(file.contents.utf8),
                "Generated/\(file.name) is stale: run swift run formsync generate FormSpecs --output Generated")
        }
    }

    @Test func generatedFolderHoldsNothingButTheOutputsOfFormSpecsAndTheirCatalog() throws {
        let specs = SpecLoader.check(filesAt: Self.specPaths()).map(\.spec)
        let forms = specs.compactMap(\.form)
        let records = specs.compactMap(\.record)
        #expect(forms.count + records.count == specs.count)
        let expected = specs.flatMap { GeneratedFile.outputs(for: $0).map(\.name) } + [GeneratedFile.catalogName]
        let present = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Generated").path)
        #expect(Set(present) == Set(expected))
        let catalog = try Data(contentsOf: Self.root.appendingPathComponent("Generated/FormCatalog.swift"))
        let generated = GeneratedFile.catalog(for: forms, records: records).contents
        #expect(catalog == Data(generated.utf8))
        #expect(generated.contains("SalesOrder.self,"))
        #expect(generated.contains("Delivery.self,"))
        #expect(generated.contains("kind: .edits, recordType: \"Customer\", keyField: \"customer_id\""))
    }

    @Test(arguments: specPaths())
    func generatingTwiceFromTwoReadsGivesTheSameBytes(_ specPath: String) throws {
        let first = SpecLoader.check(fileAt: specPath)
        let second = SpecLoader.check(fileAt: specPath)
        #expect(!GeneratedFile.outputs(for: first).isEmpty)
        #expect(GeneratedFile.outputs(for: first) == GeneratedFile.outputs(for: second))
    }

    @Test(arguments: specPaths())
    func everyJSONSchemaIsValidJSONDeclaringDraft2020AndTheFormsFields(_ specPath: String) throws {
        let spec = SpecLoader.check(fileAt: specPath)
        let fields = try #require(spec.form?.fields ?? spec.record?.fields)
        let text = try #require(
            spec.form.map { JSONSchemaGenerator.schema(for: $0) } ?? spec.record.map { JSONSchemaGenerator.schema(for: $0) }
        ).rendered()
        let object = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["$schema"] as? String == "https://json-schema.org/draft/2020-12/schema")
        let properties = try #require(object["properties"] as? [String: Any])
        #expect(Set(properties.keys) == Set(fields.map(\.name)))
        #expect(object["additionalProperties"] as? Bool == false)
    }
}
