import CorpusForms
import FieldForms
import FormSpec
import FormSyncCodegen
import FormSyncInterpreter
import FormSyncModel
import Foundation
import Testing

/// The generated JSON Schema says what `validate()` says: a corpus of payloads with known
/// verdicts, each checked against both. The gaps JSON Schema cannot close are listed in
/// docs/PROTOCOL.md §7, and held here: if one closes, this test says so.
struct JSONSchemaVerdictTests {
    static let root = InterpreterDifferentialTests.root

    static func schema(_ name: String) throws -> SchemaChecker {
        for folder in InterpreterDifferentialTests.folders {
            for spec in InterpreterDifferentialTests.specs(folder) {
                if let form = spec.form, form.name == name {
                    return SchemaChecker(schema: JSONSchemaGenerator.schema(for: form).rendered())
                }
            }
        }
        throw CocoaError(.fileNoSuchFile)
    }

    static let kitchen =
        #"{"code":"AB12","size":"small","servings":4,"vegan":false,"cuisines":["thai"],"gallery":[{"id":8,"content_type":"image/png"}],"dishes":[{"name":"Pad thai","price":{"minor_units":1200,"currency":"EUR"},"course":"main"}]}"#

    /// The base payload with top-level members set (raw JSON) or removed (nil).
    static func kitchen(_ changes: [String: String?]) -> String {
        var object = JSONObjectSlices(Data(kitchen.utf8))!
        for (key, value) in changes { object.set(key, value.map { Data($0.utf8) }) }
        return String(decoding: object.data, as: UTF8.self)
    }

    struct Case: CustomStringConvertible, Sendable {
        var form: String
        var what: String
        var json: String
        var valid: Bool
        var description: String { "\(form): \(what)" }
    }

    static let cases: [Case] = [
        Case(form: "Survey", what: "a field that does not apply, left out", json: #"{"passed":true,"score":10}"#, valid: true),
        Case(
            form: "Survey", what: "a field that applies, given", json: #"{"passed":false,"score":10,"failure_reason":"leak"}"#, valid: true),
        Case(form: "Survey", what: "a required field that applies, missing", json: #"{"passed":false,"score":10}"#, valid: false),
        Case(
            form: "Survey", what: "a field that does not apply, given", json: #"{"passed":true,"score":10,"failure_reason":"x"}"#,
            valid: false),
        Case(
            form: "Survey", what: "a field whose relevance is unknown, given", json: #"{"score":10,"failure_reason":"x"}"#, valid: false),
        Case(form: "Kitchen", what: "the base payload", json: kitchen, valid: true),
        Case(form: "Kitchen", what: "required text empty", json: kitchen(["code": #""""#]), valid: false),
        Case(form: "Kitchen", what: "required text blank", json: kitchen(["code": #""   ""#]), valid: false),
        Case(form: "Kitchen", what: "required text missing", json: kitchen(["code": nil]), valid: false),
        Case(form: "Kitchen", what: "pattern broken", json: kitchen(["code": #""ab12""#]), valid: false),
        Case(
            form: "Kitchen", what: "text too long", json: kitchen(["label": "\"" + String(repeating: "x", count: 41) + "\""]), valid: false),
        Case(
            form: "Kitchen", what: "text at its longest, in code points",
            json: kitchen(["label": "\"" + String(repeating: "é", count: 40) + "\""]), valid: true),
        Case(form: "Kitchen", what: "a multi-choice option chosen twice", json: kitchen(["cuisines": #"["thai","thai"]"#]), valid: false),
        Case(form: "Kitchen", what: "a multi-choice with too few options", json: kitchen(["cuisines": "[]"]), valid: false),
        Case(form: "Kitchen", what: "a multi-choice with a min_count left out", json: kitchen(["cuisines": nil]), valid: false),
        Case(
            form: "Kitchen", what: "a multi-choice with too many options",
            json: kitchen(["cuisines": #"["thai","basque","nordic","lebanese"]"#]), valid: false),
        Case(form: "Kitchen", what: "an unknown option", json: kitchen(["size": #""huge""#]), valid: false),
        Case(form: "Kitchen", what: "a required list empty", json: kitchen(["dishes": "[]"]), valid: false),
        Case(
            form: "Kitchen", what: "a list over its max_count",
            json: kitchen([
                "dishes": "["
                    + Array(repeating: #"{"name":"x","price":{"minor_units":1,"currency":"EUR"},"course":"main"}"#, count: 5).joined(
                        separator: ",") + "]"
            ]), valid: false),
        Case(
            form: "Kitchen", what: "a list item missing a required field", json: kitchen(["dishes": #"[{"name":"x","course":"main"}]"#]),
            valid: false),
        Case(
            form: "Kitchen", what: "a nested list item out of range",
            json: kitchen([
                "dishes":
                    #"[{"name":"x","price":{"minor_units":1,"currency":"EUR"},"course":"main","allergens":[{"kind":"nuts","severity":4}]}]"#
            ]), valid: false),
        Case(
            form: "Kitchen", what: "a nested list item in range",
            json: kitchen([
                "dishes":
                    #"[{"name":"x","price":{"minor_units":1,"currency":"EUR"},"course":"main","allergens":[{"kind":"nuts","severity":3}]}]"#
            ]), valid: true),
        Case(
            form: "Kitchen", what: "a media type in capitals", json: kitchen(["hero_shot": #"{"id":3,"content_type":"IMAGE/JPEG"}"#]),
            valid: true),
        Case(
            form: "Kitchen", what: "a media type not accepted", json: kitchen(["hero_shot": #"{"id":3,"content_type":"image/png"}"#]),
            valid: false),
        // Issue 44, defect 11: the upload took `image/jpg`; the validator refused the reference.
        Case(
            form: "Kitchen", what: "an alias of an accepted media type",
            json: kitchen(["hero_shot": #"{"id":3,"content_type":"image/jpg"}"#]), valid: true),
        Case(
            form: "Kitchen", what: "an accepted media type with a parameter",
            json: kitchen(["hero_shot": #"{"id":3,"content_type":"image/jpeg; q=0.9"}"#]), valid: true),
        Case(
            form: "Kitchen", what: "a wildcard media type with a parameter",
            json: kitchen(["gallery": #"[{"id":8,"content_type":"image/webp;x=1"}]"#]), valid: true),
        Case(
            form: "Kitchen", what: "an alias of a media type not accepted",
            json: kitchen(["hero_shot": #"{"id":3,"content_type":"audio/x-wav"}"#]), valid: false),
        Case(form: "Kitchen", what: "a file over max_bytes", json: kitchen(["hero_shot": #"{"id":3,"byte_count":3000000}"#]), valid: false),
        Case(form: "Kitchen", what: "a file with id 0", json: kitchen(["hero_shot": #"{"id":0}"#]), valid: false),
        Case(
            form: "Kitchen", what: "a wildcard media type", json: kitchen(["gallery": #"[{"id":8,"content_type":"Image/WebP"}]"#]),
            valid: true),
        Case(form: "Kitchen", what: "files with a min_count left out", json: kitchen(["gallery": nil]), valid: false),
        Case(form: "Kitchen", what: "an integer over max", json: kitchen(["servings": "51"]), valid: false),
        Case(form: "Kitchen", what: "an integer at max", json: kitchen(["servings": "50"]), valid: true),
        Case(form: "Kitchen", what: "a decimal at max", json: kitchen(["weight": "99.75"]), valid: true),
        Case(form: "Kitchen", what: "a decimal over max", json: kitchen(["weight": "99.76"]), valid: false),
        Case(
            form: "Kitchen", what: "money in another currency", json: kitchen(["budget": #"{"minor_units":10,"currency":"USD"}"#]),
            valid: false),
        Case(
            form: "Kitchen", what: "money with a malformed currency", json: kitchen(["tip": #"{"minor_units":10,"currency":"eur"}"#]),
            valid: false),
        Case(form: "Kitchen", what: "money below min", json: kitchen(["tip": #"{"minor_units":-1,"currency":"USD"}"#]), valid: false),
        Case(form: "Kitchen", what: "a reference 0", json: kitchen(["chef": "0"]), valid: false),
        Case(form: "Kitchen", what: "a placeholder reference", json: kitchen(["chef": "-3"]), valid: true),
        Case(
            form: "Kitchen", what: "a latitude out of range", json: kitchen(["location": #"{"latitude":91,"longitude":0}"#]), valid: false),
        Case(
            form: "Kitchen", what: "a negative accuracy", json: kitchen(["location": #"{"latitude":1,"longitude":0,"accuracy":-1}"#]),
            valid: false),
        Case(form: "Kitchen", what: "required_if on a choice holding", json: kitchen(["size": #""large""#]), valid: false),
        Case(form: "Kitchen", what: "required_if on a choice satisfied", json: kitchen(["size": #""large""#, "spice": "2"]), valid: true),
        Case(form: "Kitchen", what: "required_if on a boolean holding", json: kitchen(["vegan": "true"]), valid: false),
        Case(form: "Kitchen", what: "required_if on an integer holding", json: kitchen(["servings": "13"]), valid: false),
        Case(form: "Kitchen", what: "required_if on a text holding", json: kitchen(["label": #""special""#]), valid: false),
        Case(form: "Kitchen", what: "a time out of range", json: kitchen(["opens_at": #""25:00""#]), valid: false),
        Case(form: "Kitchen", what: "a time", json: kitchen(["opens_at": #""09:15""#]), valid: true),
        Case(form: "Kitchen", what: "a date that is not one", json: kitchen(["opened": #""nope""#]), valid: false),
        Case(form: "Kitchen", what: "a date", json: kitchen(["opened": #""2026-11-30""#]), valid: true),
        Case(form: "Kitchen", what: "a value of the wrong type", json: kitchen(["servings": #""4""#]), valid: false),
        Case(
            form: "NewCustomer", what: "an optional pattern field left empty", json: #"{"name":"Shop","segment":"retail","tax_id":""}"#,
            valid: true),
        Case(
            form: "NewCustomer", what: "an optional pattern field that does not match",
            json: #"{"name":"Shop","segment":"retail","tax_id":"x"}"#, valid: false),
        Case(form: "NewCustomer", what: "a required name of spaces", json: #"{"name":"   ","segment":"retail"}"#, valid: false),
        Case(
            form: "SalesOrder", what: "an order without lines", json: #"{"customer_id":5,"order_date":"2026-11-30","lines":[]}"#,
            valid: false),
    ]

    @Test(arguments: cases)
    func theSchemaAndValidateGiveTheKnownVerdict(_ test: Case) throws {
        let entry = try #require(InterpreterDifferentialTests.generatedForms[test.form])
        let errors = entry.validate(Data(test.json.utf8))
        #expect(errors.isEmpty == test.valid, "validate(): \(errors.map { "\($0.pointer) \($0.code)" })")
        let instance = try #require(SchemaChecker.parse(test.json))
        #expect(try Self.schema(test.form).accepts(instance) == test.valid, "the JSON Schema")
    }

    /// Issue 44, defect 13: a list (or a multi-choice) that does not apply is encoded as `[]`
    /// by the generated code, which `validate()` takes as empty; the schema refused it.
    @Test func aListThatDoesNotApplyMayBeEmptyForTheSchemaAsForValidate() throws {
        let spec = """
            form: Check
            version: 1
            endpoint: /checks
            fields:
              passed: boolean
              defects:
                type: list
                relevant: passed = false
                fields:
                  note: text
              marks: { type: multi_choice, options: [scratch, dent], relevant: passed = false }
            """
        let form = try #require(SpecLoader.check(text: spec, path: "Check.yaml").form)
        let entry = SpecInterpreter.entry(for: form)
        let schema = SchemaChecker(schema: JSONSchemaGenerator.schema(for: form).rendered())
        for (json, valid) in [
            (#"{"passed":true,"defects":[],"marks":[]}"#, true),
            (#"{"passed":true}"#, true),
            (#"{"passed":false,"defects":[{"note":"dent"}],"marks":["dent"]}"#, true),
            (#"{"passed":true,"defects":[{"note":"dent"}]}"#, false),
            (#"{"passed":true,"marks":["dent"]}"#, false),
        ] {
            #expect(entry.validate(Data(json.utf8)).isEmpty == valid, "validate(): \(json)")
            #expect(schema.accepts(try #require(SchemaChecker.parse(json))) == valid, "the JSON Schema: \(json)")
        }
    }

    /// Issue 44, defect 15: a server in another language could not evaluate `choice_filter:`
    /// without the options' columns; the schema now carries them beside the filter.
    @Test func aFilteredChoiceCarriesItsOptionsColumnsInTheSchema() throws {
        let survey = try #require(
            InterpreterDifferentialTests.folders.lazy.flatMap { InterpreterDifferentialTests.specs($0) }.compactMap(\.form).first {
                $0.name == "Survey"
            })
        let schema = try #require(
            JSONSerialization.jsonObject(with: Data(JSONSchemaGenerator.schema(for: survey).rendered().utf8)) as? [String: Any])
        let district = try #require((schema["properties"] as? [String: Any])?["district"] as? [String: Any])
        #expect(district["x-formsync-choice-filter"] as? String == "option.region = region")
        let options = try #require(district["x-formsync-options"] as? [[String: String]])
        #expect(options.first == ["value": "harbour", "region": "north", "kind": "urban"])
        #expect(options.map { $0["value"] } == ["harbour", "old_town", "vineyards", "coast", "madeira"])
    }

    /// What JSON Schema cannot say; docs/PROTOCOL.md §7 lists each.
    static let gaps: [Case] = [
        Case(
            form: "Kitchen", what: "a day that does not exist (schema: the shape of a date only)",
            json: kitchen(["opened": #""2026-02-30""#]), valid: false),
        Case(
            form: "Kitchen", what: "a member validate() does not know (it is dropped; the schema refuses it)",
            json: kitchen(["extra": "1"]), valid: true),
        Case(
            form: "Kitchen", what: "a blank text under required_if (schema: present is enough)",
            json: kitchen(["label": #""special""#, "why": #"" ""#]), valid: false),
        Case(form: "Survey", what: "a constraint broken (x-formsync-constraint)", json: #"{"passed":true,"score":60}"#, valid: false),
        Case(
            form: "Survey", what: "a calculated field holding another value (x-formsync-calculate)",
            json: #"{"passed":true,"score":10,"mode":"few"}"#, valid: false),
        Case(
            form: "Survey", what: "an option its choice_filter does not offer (x-formsync-choice-filter)",
            json: #"{"passed":true,"score":10,"region":"north","district":"coast"}"#, valid: false),
        Case(
            form: "Survey", what: "a relevance beyond field = value (x-formsync-relevant)",
            json: #"{"passed":false,"failure_reason":"x","score":3,"bonus":1}"#, valid: false),
    ]

    @Test(arguments: gaps)
    func theDocumentedGapsAreStillGaps(_ test: Case) throws {
        let entry = try #require(InterpreterDifferentialTests.generatedForms[test.form])
        #expect(entry.validate(Data(test.json.utf8)).isEmpty == test.valid)
        let instance = try #require(SchemaChecker.parse(test.json))
        #expect(
            try Self.schema(test.form).accepts(instance) != test.valid,
            "this gap is closed: update docs/PROTOCOL.md §7 and move the case to the corpus")
    }
}
