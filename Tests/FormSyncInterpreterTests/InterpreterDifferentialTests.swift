import CorpusForms
import FieldForms
import FormSpec
import FormSyncInterpreter
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

/// The interpreter and the generated code must agree on every payload: the same field errors
/// (pointers and codes, in order), the same placeholders, the same remapped JSON and endpoint,
/// the same merge and conflicts, the same upgrades; for records, the same errors and index
/// entries. Thousands of seeded random payloads, valid and invalid, for every spec in FormSpecs/
/// and in the test corpus.
struct InterpreterDifferentialTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func specs(_ folder: String) -> [CheckedSpec] {
        SpecLoader.check(filesAt: SpecLoader.specFiles(in: [root.appendingPathComponent(folder).path])).map(\.spec)
    }

    static let folders = ["FormSpecs", "Tests/CorpusForms"]
    static let generatedForms = FormRegistry(FieldForms.FormCatalog.forms + CorpusForms.FormCatalog.forms)
    static let generatedRecords = RecordRegistry(FieldForms.FormCatalog.records + CorpusForms.FormCatalog.records)

    static func formCases() -> [String] {
        folders.flatMap { specs($0).compactMap(\.form?.name) }
    }

    static func recordCases() -> [String] {
        folders.flatMap { specs($0).compactMap(\.record?.name) }
    }

    static func definitions(
        _ name: String
    ) -> (form: FormDefinition?, record: RecordDefinition?, interpreted: (forms: FormRegistry, records: RecordRegistry)) {
        for folder in folders {
            let all = specs(folder)
            if let form = all.compactMap(\.form).first(where: { $0.name == name }) { return (form, nil, SpecInterpreter.registries(all)) }
            if let record = all.compactMap(\.record).first(where: { $0.name == name }) {
                return (nil, record, SpecInterpreter.registries(all))
            }
        }
        return (nil, nil, SpecInterpreter.registries([]))
    }

    static func errors(_ list: [FieldError]) -> [String] { list.map { "\($0.pointer) \($0.code)" } }

    @Test func theCorpusReachesEveryFieldTypeAndBothOutcomes() async throws {
        try await OffThePool.compute {
            let kitchen = try #require(Self.definitions("Kitchen").form)
            #expect(
                Set(kitchen.fields.map(\.kind.typeName)).isSuperset(of: [
                    "text", "integer", "decimal", "boolean", "date", "time", "datetime", "choice", "multi_choice", "money", "geopoint",
                    "reference", "photo", "list",
                ]))
            var random = RandomPayloads(seed: 1)
            let entry = try #require(Self.generatedForms["Kitchen"])
            var valid = 0
            var invalid = 0
            for _ in 0..<500 {
                if entry.validate(Data(random.payload(kitchen.fields).utf8)).isEmpty { valid += 1 } else { invalid += 1 }
            }
            #expect(invalid > 100)
            // A valid Kitchen is rare by chance; the stream also holds fixed valid ones below.
            #expect(valid + invalid == 500)
        }
    }

    /// The day and moment `today()` and `now()` read in these tests: both sides read `FormClock.current`.
    static let clock = FormClock.fixed(today: LocalDate("2026-06-01")!, now: Timestamp("2026-11-30T09:00:00+01:00")!)

    @Test(arguments: formCases())
    func generatedCodeAndInterpreterAgreeOnEveryPayloadOfAForm(_ name: String) throws {
        try FormClock.$current.withValue(Self.clock) { try agreeOnEveryPayload(name) }
    }

    func agreeOnEveryPayload(_ name: String) throws {
        let (definition, _, interpreted) = Self.definitions(name)
        let form = try #require(definition)
        let generated = try #require(Self.generatedForms[name])
        let interpreter = try #require(interpreted.forms[name])
        #expect(interpreter.version == generated.version)
        #expect(interpreter.recordAction == generated.recordAction)
        #expect(interpreter.listRecordActions == generated.listRecordActions)
        #expect(interpreter.upgrades == generated.upgrades)
        var random = RandomPayloads(seed: UInt64(name.utf8.reduce(7) { $0 &* 31 &+ UInt64($1) }))
        var decodable: [Data] = []
        for round in 0..<600 {
            // Every other payload decodes, so that rules past decoding (expressions) are reached.
            random.wellTyped = round % 2 == 1
            let json = Data(random.payload(form.fields).utf8)
            let a = generated.validate(json)
            let b = interpreter.validate(json)
            #expect(Self.errors(a) == Self.errors(b), "round \(round): \(String(decoding: json, as: UTF8.self))")
            let expressionCodes: Set<String> = ["constraint", "calculated", "not_relevant", "not_offered"]
            #expect(
                a.filter { expressionCodes.contains($0.code) }.map(\.detail)
                    == b.filter { expressionCodes.contains($0.code) }.map(\.detail),
                "round \(round): \(String(decoding: json, as: UTF8.self))")
            let settledA = try? generated.recalculate(json)
            let settledB = try? interpreter.recalculate(json)
            #expect(settledA == settledB, "recalculated, round \(round): \(String(decoding: json, as: UTF8.self))")
            if let settled = settledA {
                // Settled, a payload breaks no calculation or relevance, and settles to itself.
                let errors = generated.validate(settled)
                #expect(!errors.contains { $0.code == "calculated" || $0.code == "not_relevant" }, "\(errors)")
                #expect(Self.errors(errors) == Self.errors(interpreter.validate(settled)))
                #expect((try? generated.recalculate(settled)) == settled)
            }
            let placeholdersA = try? generated.placeholders(json)
            let placeholdersB = try? interpreter.placeholders(json)
            #expect(placeholdersA == placeholdersB, "placeholders of \(String(decoding: json, as: UTF8.self))")
            guard let placeholders = placeholdersA else { continue }
            decodable.append(json)
            let ids = Dictionary(uniqueKeysWithValues: placeholders.enumerated().map { ($0.element, Int64(1000 + $0.offset)) })
            let remappedA = try generated.remap(json, ids)
            let remappedB = try interpreter.remap(json, ids)
            #expect(remappedA.payload == remappedB.payload, "remap of \(String(decoding: json, as: UTF8.self))")
            #expect(remappedA.endpoint == remappedB.endpoint)
            for version in 1..<max(1, generated.version) {
                #expect((try? generated.upgrade(json, from: version)) == (try? interpreter.upgrade(json, from: version)))
            }
        }
        #expect(decodable.count >= 15, "too few payloads decode to compare remapping and merging")
        for round in 0..<200 where decodable.count >= 3 {
            let (base, local, server) = (random.pick(decodable), random.pick(decodable), random.pick(decodable))
            let a = try generated.merge(base, local, server)
            let b = try interpreter.merge(base, local, server)
            #expect(a.merged == b.merged, "merge round \(round)")
            #expect(a.conflicts.map(\.pointer) == b.conflicts.map(\.pointer), "merge round \(round)")
        }
    }

    @Test(arguments: recordCases())
    func generatedCodeAndInterpreterAgreeOnEveryRecord(_ name: String) throws {
        let (_, definition, interpreted) = Self.definitions(name)
        let record = try #require(definition)
        let generated = try #require(Self.generatedRecords[name])
        let interpreter = try #require(interpreted.records[name])
        #expect(interpreter.scopeField == generated.scopeField)
        #expect(interpreter.indexedFields == generated.indexedFields)
        #expect(interpreter.subscriptionFields == generated.subscriptionFields)
        #expect(interpreter.devicesMayDelete == generated.devicesMayDelete)
        var random = RandomPayloads(seed: UInt64(name.utf8.reduce(11) { $0 &* 31 &+ UInt64($1) }))
        for round in 0..<400 {
            let json = Data(random.payload(record.fields).utf8)
            #expect(
                Self.errors(generated.validate(json)) == Self.errors(interpreter.validate(json)),
                "round \(round): \(String(decoding: json, as: UTF8.self))")
            let indexA = try? generated.indexEntries(json)
            let indexB = try? interpreter.indexEntries(json)
            #expect(indexA.map(Set.init) == indexB.map(Set.init), "index of \(String(decoding: json, as: UTF8.self))")
            #expect(generated.scopeValue(json) == interpreter.scopeValue(json))
        }
    }

    /// Every operator and function of the expression language appears in the corpus's Survey,
    /// and the random payloads reach each outcome the expressions add.
    @Test func theCorpusExercisesEveryExpressionFormAndOutcome() async throws {
        try await OffThePool.compute {
            let survey = try #require(Self.definitions("Survey").form)
            var operators: Set<String> = []
            var functions: Set<String> = []
            var shapes: Set<String> = []
            func walk(_ node: SpecExpression) {
                switch node.kind {
                case .integer: shapes.insert("integer")
                case .decimal: shapes.insert("decimal")
                case .text: shapes.insert("text")
                case .boolean: shapes.insert("boolean")
                case .field(let path):
                    shapes.insert(
                        path.up > 0
                            ? "../field" : path.names.count == 2 ? (path.names[0] == "option" ? "option column" : "column") : "field")
                case .negate(let inner):
                    shapes.insert("negate")
                    walk(inner)
                case .not(let inner):
                    shapes.insert("not")
                    walk(inner)
                case .binary(let op, let a, let b):
                    operators.insert(op.rawValue)
                    walk(a)
                    walk(b)
                case .call(let function, let arguments):
                    functions.insert(function.rawValue)
                    arguments.forEach(walk)
                }
            }
            func fields(_ list: [FieldDefinition]) {
                for field in list {
                    for expression in [field.relevant, field.constraint, field.calculate, field.choiceFilter].compactMap({ $0 }) {
                        walk(expression.expression)
                    }
                    if case .list(let items) = field.kind { fields(items.fields) }
                }
            }
            fields(survey.fields)
            #expect(operators == Set(SpecExpression.BinaryOperator.allCases.map(\.rawValue)))
            #expect(functions == Set(SpecExpression.Function.allCases.map(\.rawValue)))
            #expect(shapes == ["integer", "decimal", "text", "boolean", "field", "../field", "column", "option column", "negate", "not"])

            let generated = try #require(Self.generatedForms["Survey"])
            var codes: [String: Int] = [:]
            var calculated: [String: Int] = [:]
            var random = RandomPayloads(seed: 36)
            random.wellTyped = true
            try FormClock.$current.withValue(Self.clock) {
                for _ in 0..<600 {
                    let json = Data(random.payload(survey.fields).utf8)
                    for error in generated.validate(json) { codes[error.code, default: 0] += 1 }
                    guard let settled = try? generated.recalculate(json),
                        let object = try JSONSerialization.jsonObject(with: settled) as? [String: Any]
                    else { continue }
                    for field in survey.fields where field.calculate != nil && object[field.name] != nil {
                        calculated[field.name, default: 0] += 1
                    }
                }
            }
            for code in ["constraint", "not_relevant", "calculated", "not_offered", "required"] {
                #expect(codes[code, default: 0] >= 5, "\(code): \(codes)")
            }
            #expect(Set(calculated.keys) == Set(survey.fields.filter { $0.calculate != nil }.map(\.name)), "\(calculated)")
        }
    }
}
