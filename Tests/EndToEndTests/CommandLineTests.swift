import FieldForms
import FormSyncServer
import Foundation
import Testing

/// The `formsync` binary as a user runs it: exit status 0 ok, 1 problems, 2 usage mistakes.
struct CommandLineTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func formsync(_ arguments: String...) async throws -> ProcessRunner.Result {
        try await formsync(arguments)
    }

    func formsync(_ first: String, _ rest: [String]) async throws -> ProcessRunner.Result {
        try await formsync([first] + rest)
    }

    func formsync(_ arguments: [String]) async throws -> ProcessRunner.Result {
        let binary = DemoProcessTests.formsync
        try #require(FileManager.default.isExecutableFile(atPath: binary.path), "build formsync first (swift build)")
        return try await ProcessRunner.run(binary, arguments, in: Self.root)
    }

    @Test func checkExitsZeroOnTheExamplesAndOneWithEveryDiagnosticOnABrokenSpec() async throws {
        #expect(try await formsync("check", "FormSpecs").status == 0)
        let broken = try await formsync("check", "Tests/FormSpecTests/BrokenSpecs/36-many-problems-at-once.yaml")
        #expect(broken.status == 1)
        #expect(broken.output.isEmpty)  // diagnostics are not data: standard error
        let lines = broken.errors.split(separator: "\n").filter { $0.contains(": error: ") }
        #expect(lines.count == 7)
        #expect(
            lines.allSatisfy { $0.hasPrefix("Tests/FormSpecTests/BrokenSpecs/36-many-problems-at-once.yaml:") && $0.contains(": error: ") })
    }

    /// docs/openapi.yaml is what `formsync openapi FormSpecs` writes now (like Generated/), and
    /// `--check` sees a stale copy.
    @Test func theCheckedInOpenAPIDescriptionIsWhatTheCommandWritesNow() async throws {
        let fresh = try await formsync("openapi", "FormSpecs", "--output", "docs/openapi.yaml", "--check")
        #expect(fresh.status == 0, "\(fresh.errors)")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("openapi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let stale = folder.appendingPathComponent("openapi.yaml")
        try Data("openapi: \"3.1.0\"\n".utf8).write(to: stale)
        let refused = try await formsync("openapi", "FormSpecs", "--output", stale.path, "--check")
        #expect(refused.status == 1 && refused.errors.contains("stale"))
        let printed = try await formsync("openapi", "FormSpecs")
        #expect(printed.status == 0 && printed.output.hasPrefix("openapi: \"3.1.0\"\n"))
        #expect(
            Data(printed.output.utf8) == FileManager.default.contents(atPath: Self.root.appendingPathComponent("docs/openapi.yaml").path))
        let broken = try await formsync("openapi", "Tests/FormSpecTests/BrokenSpecs/36-many-problems-at-once.yaml")
        #expect(broken.status == 1 && broken.output.isEmpty)
        #expect(broken.errors.split(separator: "\n").filter { $0.contains(": error: ") }.count == 7)
    }

    @Test func serveRefusesASeedFileWithABadRecordAndSeedsNothingOfIt() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("seed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let seed = folder.appendingPathComponent("seed.json")
        try Data(
            #"[{"type":"Delivery","record":{"courier_id":"ada","status":"assigned","address":"Rua 1"}},{"type":"Delivery","record":{"status":"lost"}}]"#
                .utf8
        ).write(to: seed)
        let db = folder.appendingPathComponent("db").path
        let refused = try await formsync("serve", "--port", "0", "--db", db, "--records", seed.path)
        #expect(refused.status == 2)
        #expect(refused.errors.contains("nothing was seeded: record 1 (Delivery)"))
        #expect(refused.errors.contains("#/status"))
        let server = try SyncServer(directory: db, forms: FormCatalog.forms, records: FormCatalog.records)
        #expect(server.records(workspace: "default").isEmpty)
    }

    @Test func generateCheckRefusesAReleasedShapeEditedInPlaceAndDiffExitsByWhatItFinds() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("evolve-\(UUID().uuidString)")
        let specs = folder.appendingPathComponent("specs")
        try FileManager.default.createDirectory(at: specs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for name in ["Customer.yaml", "SalesOrder.yaml", "formspecs.lock"] {
            try FileManager.default.copyItem(
                at: Self.root.appendingPathComponent("FormSpecs/\(name)"), to: specs.appendingPathComponent(name))
        }
        let output = folder.appendingPathComponent("out").path
        #expect(try await formsync("generate", specs.path, "--output", output).status == 0)
        #expect(try await formsync("generate", specs.path, "--output", output, "--check").status == 0)
        // A field becomes required, the version stays: refused, naming the version to bump to.
        let path = specs.appendingPathComponent("SalesOrder.yaml")
        let text = try String(contentsOf: path, encoding: .utf8)
        try text.replacingOccurrences(
            of: "  payment_terms_days:\n    type: integer\n", with: "  payment_terms_days:\n    type: integer\n    required: true\n"
        )
        .write(to: path, atomically: true, encoding: .utf8)
        let edited = try await formsync("generate", specs.path, "--output", output, "--check")
        let v = SalesOrder.formVersion
        #expect(edited.status == 1)
        #expect(edited.errors.contains("the shape of form SalesOrder changed but its version is still \(v)"))
        #expect(edited.errors.contains("bump version to \(v + 1)"))
        // Bumped: generate records the next version, diff --lock shows what it means, and exits 0 (a warning).
        try String(contentsOf: path, encoding: .utf8).replacingOccurrences(of: "version: \(v)", with: "version: \(v + 1)").write(
            to: path, atomically: true, encoding: .utf8)
        #expect(try await formsync("generate", specs.path, "--output", output).status == 0)
        let lock = try String(contentsOf: specs.appendingPathComponent("formspecs.lock"), encoding: .utf8)
        #expect(lock.contains("\"\(v + 1)\" : {"))
        // Removing a field with no upgrader is breaking: diff against the lock exits 1.
        try String(contentsOf: path, encoding: .utf8).replacingOccurrences(of: "version: \(v + 1)", with: "version: \(v + 2)")
            .replacingOccurrences(of: "  discount_percent:\n    type: decimal\n    min: 0\n    max: 30\n", with: "")
            .write(to: path, atomically: true, encoding: .utf8)
        let diff = try await formsync("diff", "--lock", specs.path)
        #expect(diff.status == 1)
        #expect(diff.errors.contains("version \(v + 1) → \(v + 2): field 'discount_percent' was removed"))
        #expect(diff.errors.contains("version \(v) → \(v + 1): field 'payment_terms_days': became required"))
        #expect(try await formsync("diff", "--lock", folder.appendingPathComponent("nowhere").path).status == 2)
    }

    @Test func everyDiagnosticFormatOfCheckDiffAndGenerateCheck() async throws {
        let broken = "Tests/FormSpecTests/BrokenSpecs/01-unknown-top-level-key.yaml"
        // json: one document on standard output, nothing else there.
        let json = try await formsync("check", broken, "--format", "json")
        #expect(json.status == 1)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        #expect(document["errors"] as? Int == 2)
        let first = try #require((document["diagnostics"] as? [[String: Any]])?.last)
        #expect(first["path"] as? String == broken)
        #expect(first["line"] as? Int == 4)
        #expect(first["severity"] as? String == "error")
        #expect((first["message"] as? String)?.contains("did you mean 'fields'") == true)
        // github: workflow commands, properties escaped.
        let github = try await formsync("check", broken, "--format", "github")
        #expect(
            github.output.split(separator: "\n").contains(
                "::error file=\(broken),line=4,col=1,title=formsync::unknown key 'fileds' at the top of a spec (did you mean 'fields'?)"))
        // text: standard error only.
        let text = try await formsync("check", broken)
        #expect(text.output.isEmpty)
        #expect(text.errors.contains("\(broken):4:1: error: unknown key 'fileds'"))
        // diff and generate --check speak the same formats.
        let pair = "Tests/FormSpecTests/EvolutionPairs/04-field-removed-without-upgrader"
        let diff = try await formsync("diff", pair + "/before", pair + "/after", "--format", "github")
        #expect(diff.status == 1)
        #expect(
            diff.output.hasPrefix(
                "::error file=\(pair)/after/Visit.yaml,line=2,col=10,title=formsync::version 1 → 2: field 'note' was removed"))
        let diffJSON = try await formsync("diff", pair + "/before", pair + "/after", "--format", "json")
        #expect((try JSONSerialization.jsonObject(with: Data(diffJSON.output.utf8)) as? [String: Any])?["errors"] as? Int == 1)
        let generated = try await formsync("generate", "FormSpecs", "--output", "Generated", "--check", "--format", "json")
        #expect(generated.status == 0)
        #expect((try JSONSerialization.jsonObject(with: Data(generated.output.utf8)) as? [String: Any])?["errors"] as? Int == 0)
        #expect(try await formsync("check", "FormSpecs", "--format", "yaml").status == 2)
    }

    @Test func aMissingPathIsAUsageMistakeWithTheSystemsReasonAndVersionPrintsTheVersion() async throws {
        for command in [["check"], ["diff", "FormSpecs"], ["generate", "--output", "/tmp/x"]] {
            let missing = try await formsync(command[0], Array(command.dropFirst()) + ["no-such-folder"])
            #expect(missing.status == 2, "\(command)")
            #expect(missing.errors.contains("no-such-folder: No such file or directory"), "\(command): \(missing.errors)")
        }
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("empty-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: empty) }
        #expect(try await formsync("check", empty.path).status == 2)
        let version = try await formsync("--version")
        #expect(version.status == 0)
        #expect(version.output.hasPrefix("formsync 0."))
    }

    @Test func usageMistakesExitTwoAndHelpExitsZero() async throws {
        #expect(try await formsync("check").status == 2)
        #expect(try await formsync("nonsense").status == 2)
        #expect(try await formsync("generate", "FormSpecs").status == 2)
        #expect(try await formsync("check", "--bogus", "FormSpecs").status == 2)
        // Benchmark options are bounded like every other number from the command line.
        for bad in [["--lines", "0"], ["--lines", "201"], ["--rounds", "2"], ["--lines", "9999999999999999999999"]] {
            #expect(try await ProcessRunner.run(DemoProcessTests.lab, ["bench", "outbox"] + bad).status == 2, "\(bad)")
        }
        for command in ["check", "generate", "diff", "schema", "serve", "conformance", "outbox", "demo"] {
            let help = try await formsync(command, "--help")
            #expect(help.status == 0)
            #expect(help.output.contains("usage: formsync \(command)"))
        }
    }

    @Test func generateCheckNamesEveryStaleMissingAndOrphanedFile() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gen-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(try await formsync("generate", "FormSpecs", "--output", folder.path).status == 0)
        #expect(try await formsync("generate", "FormSpecs", "--output", folder.path, "--check").status == 0)
        try Data("// DO NOT EDIT. Generated by formsync-gen from Old.yaml.\n".utf8).write(to: folder.appendingPathComponent("Old.swift"))
        try FileManager.default.removeItem(at: folder.appendingPathComponent("SalesOrder.schema.json"))
        try Data("// DO NOT EDIT. Generated by formsync-gen, but edited by hand\n".utf8).write(
            to: folder.appendingPathComponent("NewCustomer.swift"))
        let stale = try await formsync("generate", "FormSpecs", "--output", folder.path, "--check")
        #expect(stale.status == 1)
        #expect(stale.errors.contains("SalesOrder.schema.json:1:1: error: missing"))
        #expect(stale.errors.contains("NewCustomer.swift:1:1: error: stale"))
        #expect(stale.errors.contains("Old.swift:1:1: error: generated from a spec that no longer exists"))
        #expect(try await formsync("generate", "FormSpecs", "--output", folder.path).status == 0)
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("Old.swift").path))
        #expect(try await formsync("generate", "FormSpecs", "--output", "Generated", "--check").status == 0)
    }

    @Test func schemaPrintsTheCheckedInSpecLanguageSchema() async throws {
        let run = try await formsync("schema")
        #expect(run.status == 0)
        #expect(run.output == (try String(contentsOf: Self.root.appendingPathComponent("FormSpecs/formspec.schema.json"), encoding: .utf8)))
    }
}

/// The torture and benchmark commands refuse absurd numbers and unknown words before they start
/// anything (exit status 2).
struct TortureArgumentTests {
    @Test(arguments: [
        ["torture", "crash", "--kills", "0"],
        ["torture", "crash", "--kills", "99999999999999999999"],
        ["torture", "sim", "--steps", "100000"],
        ["torture", "sim", "--seeds", "-5"],
        [
            "torture", "device", "--db", "/tmp/x", "--server", "http://127.0.0.1:1", "--refresh-token", "t", "--log", "/tmp/l",
            "--customers", "1", "--crash", "nowhere:1",
        ],
        [
            "torture", "device", "--db", "/tmp/x", "--server", "http://127.0.0.1:1", "--refresh-token", "t", "--log", "/tmp/l",
            "--customers", "1", "--crash", "leased:0",
        ],
        ["torture", "disk-full", "--db", "/tmp/x", "--server", "http://127.0.0.1:1", "--refresh-token", "t", "--headroom", "-1"],
        ["torture", "nonsense"],
        ["bench", "enqueue", "--rounds", "1"],
        ["bench", "enqueue", "--parts", "sequential,everything"],
        ["bench", "enqueue", "--parts", ""],
        ["bench", "cold-open-child", "sideways", "/tmp/x"],
        ["bench", "server", "--workers", "0"],
        ["bench", "server", "--identities", "sequential"],
    ])
    func anAbsurdArgumentIsAUsageError(_ arguments: [String]) async throws {
        let binary = DemoProcessTests.lab
        try #require(FileManager.default.isExecutableFile(atPath: binary.path), "build the lab first (swift build)")
        let run = try await ProcessRunner.run(binary, arguments)
        #expect(run.status == 2, "\(arguments): \(run.errors)")
    }
}
