import EvolutionV4
import FormSpec
import FormSyncCodegen
import FormSyncModel
import Foundation
import Testing

/// A server that is not written in Swift reads a form's upgraders from its JSON Schema
/// (`x-formsync-upgrades`, docs/PROTOCOL.md "Older form versions"). Applied as PROTOCOL.md says,
/// they must bring every older payload to exactly what the generated code brings it to.
@Suite struct PublishedUpgradesTests {
    /// The published steps of Visit version 4, read back from its rendered schema.
    static func publishedSteps() throws -> [[String: Any]] {
        let specs = InterpreterDifferentialTests.specs("Tests/Evolution/V4")
        let form = try #require(specs.compactMap(\.form).first { $0.name == "Visit" })
        let schema = JSONSchemaGenerator.schema(for: form).rendered()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(schema.utf8)) as? [String: Any])
        return try #require(object["x-formsync-upgrades"] as? [[String: Any]])
    }

    /// PROTOCOL.md's rule, written as a third party would: each step whose `from` is at least the
    /// payload's version, in order: renames (by old name), value maps (a choice, or each item of
    /// a multi-choice), drops, then defaults for fields the payload does not hold.
    static func apply(_ steps: [[String: Any]], to payload: [String: Any], from version: Int, target: Int) -> [String: Any] {
        var object = payload
        for step in steps.sorted(by: { ($0["from"] as? Int ?? 0) < ($1["from"] as? Int ?? 0) }) {
            guard let from = step["from"] as? Int, from >= version, from < target else { continue }
            for (old, new) in ((step["rename"] as? [String: String]) ?? [:]).sorted(by: { $0.key < $1.key }) {
                guard let value = object.removeValue(forKey: old) else { continue }
                object[new] = value
            }
            for (field, values) in ((step["map"] as? [String: [String: String]]) ?? [:]) {
                if let text = object[field] as? String, let mapped = values[text] { object[field] = mapped }
                if let list = object[field] as? [String] { object[field] = list.map { values[$0] ?? $0 } }
            }
            for field in (step["drop"] as? [String]) ?? [] { object.removeValue(forKey: field) }
            for (field, value) in (step["default"] as? [String: Any]) ?? [:] where object[field] == nil { object[field] = value }
        }
        return object
    }

    @Test func theSchemaPublishesEachStepWithItsVersions() throws {
        let steps = try Self.publishedSteps()
        #expect(steps.map { $0["from"] as? Int } == [1, 2])
        #expect(steps.map { $0["to"] as? Int } == [2, 3])
        #expect(steps[0]["rename"] as? [String: String] == ["note": "remarks"])
        #expect(steps[0]["drop"] as? [String] == ["fax"])
        #expect(steps[1]["map"] as? [String: [String: String]] == ["outcome": ["partial": "done"]])
        #expect(steps[1]["default"] as? [String: String] == ["priority": "normal"])
    }

    @Test func aThirdPartyApplyingThePublishedStepsGetsWhatTheGeneratedCodeGets() throws {
        let steps = try Self.publishedSteps()
        let generated = try #require(FormRegistry([EvolutionV4.Visit.self])["Visit"])
        let payloads: [(version: Int, json: String)] = [
            (1, #"{"site":"ABC-1","outcome":"partial","note":"gate locked","fax":"+33 1","amount":{"minor_units":1250,"currency":"EUR"}}"#),
            (1, #"{"site":"ABC-2","outcome":"missed"}"#),
            (1, #"{"site":"ABC-3","outcome":"done","note":"ok","remarks":"kept?"}"#),
            (2, #"{"site":"ABC-4","outcome":"partial","remarks":"half done"}"#),
            (2, #"{"site":"ABC-5","outcome":"done","priority":"high"}"#),
            (3, #"{"site":"ABC-6","outcome":"missed","priority":"low"}"#),
            (4, #"{"site":"ABC-7","outcome":"done","priority":"normal"}"#),
        ]
        for (version, json) in payloads {
            let ours = try JSONSerialization.jsonObject(with: try generated.upgrade(Data(json.utf8), from: version)) as? NSDictionary
            let input = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            let theirs = Self.apply(steps, to: input, from: version, target: generated.version) as NSDictionary
            #expect(ours == theirs, "version \(version): \(json)")
        }
    }
}
