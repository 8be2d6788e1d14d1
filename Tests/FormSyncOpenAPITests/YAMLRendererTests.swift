import FormSyncCodegen
import FormSyncOpenAPI
import FormSyncTesting
import Foundation
import Testing

/// The YAML is read back by a real YAML 1.1 reader (PyYAML, which OpenAPI validators use) as
/// exactly the JSON it was made from: strings with line and paragraph separators, quotes,
/// controls and words YAML reads as booleans stay strings, numeric keys stay keys.
struct YAMLRendererTests {
    static let tricky: JSONValue = .object([
        ("200", .string("a status code key")),
        ("on", .string("yes")),
        ("no", .array([.string("off"), .string("~"), .string("null"), .string("123"), .string("")])),
        ("text", .string("line\nbreak\r\ttab \"quoted\" back\\slash \u{2028}LS \u{2029}PS \u{85}NEL \u{7F}DEL \u{1}SOH \u{FEFF}BOM é 🚚")),
        ("- dash", .string(": colon # hash")),
        (
            "nested",
            .object([
                ("empty", .object([])), ("none", .array([])),
                ("list", .array([.object([("a", .integer(1)), ("b", .bool(false))]), .array([.null, .number("2.5")])])),
            ])
        ),
        ("raw", .json("{\"x\": [1, \"\u{2028}\"],\n\t\"y\": null}")),
        ("$ref", .string("#/components/schemas/Money")),
    ])

    /// PyYAML's reading of `yaml`, as JSON, or nil with the reason recorded.
    static func pythonReading(_ yaml: String) async throws -> Any? {
        try await Python.json(
            """
            json, sys, yaml = map(__import__, ["json", "sys", "yaml"])
            sys.stdout.write(json.dumps(yaml.safe_load(open(sys.argv[1], encoding="utf-8").read())))
            """, input: Data(yaml.utf8))
    }

    @Test func aRealYAMLReaderReadsBackTheJSONItWasMadeFrom() async throws {
        let yaml = YAMLRenderer.render(Self.tricky)
        let read = try #require(try await Self.pythonReading(yaml))
        let expected = try JSONSerialization.jsonObject(with: Data(Self.tricky.rendered().utf8))
        let a = try JSONSerialization.data(withJSONObject: read, options: [.sortedKeys])
        let b = try JSONSerialization.data(withJSONObject: expected, options: [.sortedKeys])
        #expect(String(decoding: a, as: UTF8.self) == String(decoding: b, as: UTF8.self), "\(yaml)")
    }

    @Test func keysThatAreNotPlainWordsAreQuoted() {
        let yaml = YAMLRenderer.render(
            .object([("200", .integer(1)), ("On", .integer(2)), ("plain_key-1", .integer(3)), ("/path", .integer(4))]))
        #expect(yaml == "\"200\": 1\n\"On\": 2\nplain_key-1: 3\n\"/path\": 4\n")
    }
}
