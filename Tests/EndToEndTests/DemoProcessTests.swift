import Foundation
import Testing

/// Runs the real `formsync demo` as a process: it starts the server, kills one device process
/// with SIGKILL mid-flush and restarts it, and exits 0 only when nothing was lost or applied twice.
struct DemoProcessTests {
    static var formsync: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("formsync")
    }

    /// The lab (benchmarks and torture harnesses), built beside the tool.
    static var lab: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("formsync-lab")
    }

    @Test func theDemoSurvivesAKilledDeviceWithNothingLostOrAppliedTwice() async throws {
        let binary = Self.formsync
        try #require(
            FileManager.default.isExecutableFile(atPath: binary.path), "build formsync first (swift build), looked for \(binary.path)")
        let kept = FileManager.default.temporaryDirectory.appendingPathComponent("demo-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: kept) }
        let run = try await ProcessRunner.run(binary, ["demo", "--seed", "11", "--workers", "2", "--items", "5", "--keep", kept.path])
        let text = run.output
        #expect(run.status == 0, "\(text)")
        #expect(text.contains("duplicates found on the server:              0"))
        #expect(text.contains("every captured submission is on the server:  yes"))
        #expect(text.contains("killed mid-flush (SIGKILL)"))
        #expect(text.contains("OK: nothing lost, nothing applied twice, both directions converged."))
        // Standard error is a pipe here, as in a CI log: plain progress lines, no carriage returns.
        #expect(!run.errors.contains("\r"), "\(run.errors.debugDescription)")
        #expect(run.errors.contains("  syncing: server holds "))
        #expect(text.contains("device stores equal the server's scope:      yes"))
        #expect(text.contains("inspection findings made as records:         4 of 4, each once with its site"), "two findings an inspection")
        #expect(text.contains("findings closed offline, before they landed: 2 of 2 fixed on the server"))
        // Field work: an app killed mid-form resumes its draft; each crew holds its region's jobs
        // (north 2 less the one moved west, south 2) and closes one offline.
        #expect(text.contains("app killed (SIGKILL) mid-form"), "\(text)")
        #expect(text.contains("resumed from its draft: landed once, its 2 photos byte for byte, no draft left"), "\(text)")
        #expect(text.contains("jobs by region subscription:                 3 held on 2 devices, each its own region's"), "\(text)")
        #expect(text.contains("2 of 2 regions' first job done offline (version 2)"), "\(text)")
        #expect(text.contains("orders upgraded on updated devices:          2 of 2"))
        #expect(text.contains("orders sent as version 2 by the old build:   2 of 2"))
        #expect(text.contains("orders stored as version 3 on the server:    4 of 4"))
        #expect(text.contains("device edits on the server's records:        4 of 4 delivery edits"))
        #expect(text.contains("order totals equal to their lines:           4 of 4"))
        #expect(text.contains("failure reasons only on failed inspections:  2 of 2"))
        // Every device enrolled from a link; the lost phone sealed what it held, and support got it back.
        #expect(text.contains("enrolled for courier-1 as dv-"))
        #expect(text.contains("items sealed on it: 3 of 3 it still held"))
        #expect(text.contains("recovered from its support bundle:           3 of 3, sent from a new phone"))
        #expect(text.contains("its documents on the server:                 5 of 5, 0 applied twice"))
        #expect(text.contains("nothing the back office accepted was lost:   yes"))
        // The back office's half: every event of the day at the demo's receiver, once, signed and
        // in order; one delivery sent back and fixed by its courier; the day exported.
        #expect(text.contains(" events, 0 repeated, 0 badly signed, 0 documents out of order"), "\(text)")
        // (Whether its photos made versions first depends on when each arrived.)
        #expect(text.contains("sent back and fixed:                         yes, version "), "\(text)")
        #expect(text.contains("(accepted by courier-1, "), "\(text)")
        #expect(text.contains("reviewed by supervisor, edited by courier-1)"), "\(text)")
        // The export's CSV tables, read back by Python's csv module, hold the server's documents.
        let checked = try await ExportTests.python([
            "-c", ExportTests.oracle, kept.appendingPathComponent("export").path, kept.appendingPathComponent("server-documents.json").path,
        ])
        #expect(checked.status == 0, "\(checked.output)\(checked.errors)")
        #expect(checked.output.contains("equal: 12 tables"), "\(checked.output)")
    }
}
