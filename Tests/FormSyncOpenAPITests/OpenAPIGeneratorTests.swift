import FormSpec
import FormSyncCodegen
import FormSyncProtocol
import FormSyncTesting
import Foundation
import Testing

@testable import FormSyncOpenAPI

/// The OpenAPI description is the route table written out: every route and every form endpoint
/// is in it, nothing else is, no object says a thing twice, and every error code is named.
struct OpenAPIGeneratorTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func exampleDocument() throws -> (JSONValue, [FormDefinition]) {
        let files = SpecLoader.specFiles(in: [root.appendingPathComponent("FormSpecs").path])
        let specs = SpecLoader.check(filesAt: files)
        let forms = specs.compactMap(\.spec.form)
        let records = specs.compactMap(\.spec.record)
        try #require(forms.count >= 5 && !records.isEmpty, "the example specs load")
        return (OpenAPIGenerator.document(forms: forms, records: records, version: "test"), forms)
    }

    static func member(_ value: JSONValue, _ key: String) -> JSONValue? {
        guard case .object(let pairs) = value else { return nil }
        return pairs.first { $0.0 == key }?.1
    }

    static func keys(_ value: JSONValue?) -> [String] {
        guard case .object(let pairs)? = value else { return [] }
        return pairs.map(\.0)
    }

    @Test func everyRouteAndEveryFormEndpointIsAnOperationAndNothingElseIs() throws {
        let (document, forms) = try Self.exampleDocument()
        let paths = Self.member(document, "paths")
        var found: Set<String> = []
        for path in Self.keys(paths) {
            for method in Self.keys(paths.flatMap { Self.member($0, path) }) { found.insert("\(method.uppercased()) \(path)") }
        }
        var expected = Set(Route.allCases.compactMap { route in route.openAPIPath.map { "\(route.method) \($0)" } })
        for form in forms { expected.insert("POST \(form.endpoint)") }
        #expect(found == expected)
        #expect(Route.allCases.filter { $0.openAPIPath == nil } == [.submission], "only a submission's path comes from a spec")
    }

    @Test func eachOperationCarriesItsRoutesParametersAndSuccesses() throws {
        let (document, _) = try Self.exampleDocument()
        let paths = Self.member(document, "paths")
        for route in Route.allCases {
            guard let path = route.openAPIPath,
                let operation = paths.flatMap({ Self.member($0, path) }).flatMap({ Self.member($0, route.method.lowercased()) })
            else {
                continue
            }
            guard case .array(let parameters)? = Self.member(operation, "parameters") ?? .array([]) else { continue }
            let names = parameters.compactMap { parameter -> String? in
                if case .string(let name)? = Self.member(parameter, "name") { return name }
                return nil
            }
            #expect(names == route.parameters.map(\.name), "\(route)")
            #expect(Self.keys(Self.member(operation, "responses")) == route.successes.map(String.init) + ["default"], "\(route)")
            let security = Self.member(operation, "security")
            #expect(security == .array(route.needsAccessToken ? [.object([("bearer", .array([]))])] : []), "\(route)")
        }
    }

    @Test func noObjectOfTheDescriptionNamesAKeyTwice() throws {
        let (document, _) = try Self.exampleDocument()
        var stack = [document]
        var objects = 0
        while let value = stack.popLast() {
            switch value {
            case .object(let pairs):
                objects += 1
                #expect(Set(pairs.map(\.0)).count == pairs.count, "\(pairs.map(\.0))")
                stack += pairs.map(\.1)
            case .array(let items):
                stack += items
            default:
                break
            }
        }
        #expect(objects > 500)
    }

    @Test func theProblemSchemaNamesEveryErrorCode() throws {
        let (document, _) = try Self.exampleDocument()
        let problem = Self.member(document, "components").flatMap { Self.member($0, "schemas") }.flatMap { Self.member($0, "Problem") }
        let code = problem.flatMap { Self.member($0, "properties") }.flatMap { Self.member($0, "code") }
        #expect(code.flatMap { Self.member($0, "enum") } == .array(ProblemCode.allCases.map { .string($0.rawValue) }))
    }

    @Test func aFormsPayloadSchemaPointsAtTheSharedComponentsNotAtItsOwnDefinitions() throws {
        let (document, _) = try Self.exampleDocument()
        let text = document.rendered()
        #expect(!text.contains("#/$defs/") && !text.contains("\"$defs\""))
        #expect(text.contains("\"#/components/schemas/Money\""))
        for name in JSONSchemaGenerator.sharedDefinitions.map(\.name) {
            #expect(Self.keys(Self.member(document, "components").flatMap { Self.member($0, "schemas") }).contains(name))
        }
    }

    @Test func anEndpointsPlaceholdersArePathParameters() {
        #expect(OpenAPIGenerator.placeholders(in: "/customers/{customer_id}/orders") == ["customer_id"])
        #expect(OpenAPIGenerator.placeholders(in: "/a/{x}/{y}") == ["x", "y"])
        #expect(OpenAPIGenerator.placeholders(in: "/plain/{}/path").isEmpty)
    }
}

/// docs/openapi.yaml is held to a real validator (openapi-spec-validator, from PyPI), which is
/// shown to refuse a description that breaks the specification.
struct OpenAPIValidationTests {
    @Test func theCheckedInDescriptionValidatesAndABrokenOneDoesNot() async throws {
        let path = OpenAPIGeneratorTests.root.appendingPathComponent("docs/openapi.yaml").path
        let valid = try await Python.run(["-m", "openapi_spec_validator", path])
        #expect(valid.status == 0, "\(valid.errors.suffix(2000)) — \(Python.installHint)")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        // A path parameter must be required (OpenAPI 3.1 §4.8.12.1).
        let broken = text.replacingOccurrences(
            of: "name: \"hex\"\n          in: \"path\"\n          required: true",
            with: "name: \"hex\"\n          in: \"path\"\n          required: false")
        #expect(broken != text, "the broken copy differs")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("openapi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let copy = folder.appendingPathComponent("broken.yaml")
        try broken.write(to: copy, atomically: true, encoding: .utf8)
        let refused = try await Python.run(["-m", "openapi_spec_validator", copy.path])
        #expect(refused.status != 0 && valid.status == 0, "the validator refuses the broken copy")
    }
}
