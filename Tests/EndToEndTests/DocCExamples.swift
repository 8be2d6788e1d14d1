import FieldForms
import FormSpec
import FormSyncAuthoring
import FormSyncClient
import FormSyncCodegen
import FormSyncInterpreter
import FormSyncModel
import FormSyncServer
import FormSyncTesting
import Foundation
import Testing

// Every Swift example of the modules' DocC landing pages, verbatim (ReadmeTests checks that
// the pages and this file agree), run with what each example assumes is at hand.
struct DocCExamples {
    static let root = ReadmeTests.root
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("docc-\(UUID().uuidString)")

    @Test func formSpecsLandingPageChecksAndComparesTheExampleSpecs() throws {
        let specsFolder = Self.root.appendingPathComponent("FormSpecs").path
        let results = SpecLoader.check(filesAt: SpecLoader.specFiles(in: [specsFolder]))
        for (_, spec) in results { for problem in spec.diagnostics { print(problem) } }  // path:line:column: error: …
        let lock = try SpecLock.read(specsFolder + "/formspecs.lock")
        let changes = SpecDiff.compare(lock: lock, specs: results)
        #expect(results.count >= 8 && results.allSatisfy { $0.spec.diagnostics.isEmpty })
        #expect(changes.filter { $0.severity == .error }.isEmpty)
    }

    @Test func formSyncAuthoringsLandingPageGivesTheCheckedInSchema() throws {
        let schema = SpecLanguageSchema.schema().rendered()  // FormSpecs/formspec.schema.json
        #expect(schema == (try String(contentsOf: Self.root.appendingPathComponent("FormSpecs/formspec.schema.json"), encoding: .utf8)))
    }

    @Test func formSyncCodegensLandingPageWritesASpecsFilesAndTheCatalog() throws {
        let checkedSpec = SpecLoader.check(fileAt: Self.root.appendingPathComponent("FormSpecs/SalesOrder.yaml").path)
        let forms = [try #require(checkedSpec.form)]
        let records: [RecordDefinition] = []
        var written: [String: String] = [:]
        func write(_ name: String, _ contents: String) { written[name] = contents }
        for file in GeneratedFile.outputs(for: checkedSpec) { write(file.name, file.contents) }
        let catalog = GeneratedFile.catalog(for: forms, records: records)
        #expect(Set(written.keys) == ["SalesOrder.swift", "SalesOrder.schema.json"])
        #expect(catalog.contents.contains("SalesOrder.self"))
    }

    @Test func formSyncInterpretersLandingPageServesSpecsWithoutGeneratedCode() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let specsFolder = Self.root.appendingPathComponent("FormSpecs").path
        let path = folder.path
        let specs = SpecLoader.check(filesAt: SpecLoader.specFiles(in: [specsFolder])).map(\.spec)
        let (forms, records) = SpecInterpreter.registries(specs)
        let server = try SyncServer(directory: path, registry: forms, records: records)
        #expect(server.acceptedForms.contains { $0.name == "SalesOrder" })
        #expect(server.recordTypeNames.contains("Delivery"))
    }

    @Test func formSyncModelsLandingPageValidatesAndMerges() {
        let base = SalesOrder(customerId: EntityRef(501), orderDate: LocalDate("2026-11-29"))
        let current = base
        let order = SalesOrder(customerId: EntityRef(501), orderDate: LocalDate("2026-11-30"))
        let errors = order.validate()  // [FieldError] with JSON Pointers
        let merged = SalesOrder.merge(base: base, local: order, server: current)
        #expect(errors.allSatisfy { $0.pointer.hasPrefix("#") || $0.pointer.hasPrefix("/") })
        #expect(merged.merged.orderDate == LocalDate("2026-11-30") && merged.conflicts.isEmpty)
    }

    @Test func formSyncServersLandingPageStartsSeedsAndPlansFaults() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.path
        let server = try SyncServer(directory: path, forms: FormCatalog.forms, records: FormCatalog.records)
        let port = try server.start()
        try server.putRecord(Delivery(courierId: "ada", status: .assigned, address: "Rua 1"), workspace: "acme")
        server.faults.add(.dropAfterCommit, count: 3, target: .appends)
        defer { server.stop() }
        #expect(port > 0 && server.records(workspace: "acme").count == 1)
    }

    @Test func formSyncTestingsLandingPageScriptsAnOutboxsTransport() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("outbox.sqlite").path
        let transport = ScriptedTransport(workspace: "acme")
        transport.script(.transient(reason: "HTTP 503", retryAfter: .seconds(1)))
        let outbox = try Outbox(path: path, forms: FormCatalog.forms, transport: transport)
        #expect(await outbox.stateCounts().values.reduce(0, +) == 0)
    }
}
