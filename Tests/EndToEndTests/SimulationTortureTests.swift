import FormSyncTorture
import Foundation
import Testing

/// The short run of the seeded simulation (`formsync-lab torture sim`): a few hundred fault
/// schedules against the reference server's handler through a seeded network, with the app's
/// `SyncEngine` running beside them on the same virtual clock.
struct SimulationTortureTests {
    @Test func threeHundredSeededFaultSchedulesKeepEveryInvariant() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sim-tests-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let summary = await SimulationRunner(first: 1, count: 300, steps: 80, folder: folder).run()
        #expect(summary.seeds == 300)
        #expect(summary.failed.isEmpty, "\(summary)")
        // The schedules did what they claim: work confirmed, faults of every kind injected.
        #expect(summary.confirmed > 3000, "\(summary)")
        // The engine ran its own loop: its backoff, due-time and token waits ended on the virtual clock.
        #expect(summary.engineWakes > 1000, "\(summary)")
        for fault in ["outage", "request dropped", "reply lost after commit", "captive portal", "redirect", "422", "409 key in flight"] {
            #expect(summary.faults[fault, default: 0] > 0, "no \(fault) in \(summary.faults)")
        }
        #expect(
            summary.faults.keys.contains { $0.hasPrefix("503 Retry-After: 999999999999") || $0.hasPrefix("429 Retry-After: 999999999999") })
    }

    @Test func aNetworkThatDeliversSubmissionsTwiceIsCaughtWithItsSeedAndTrace() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sim-tests-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let simulation = Simulation(seed: 7, folder: folder, sabotage: true)
        let actions = Simulation.schedule(seed: 7, steps: 80)
        let outcome = await simulation.run(actions)
        #expect(outcome.failures.contains { $0.contains("which the device never made") }, "\(outcome.failures)")
        let report = await SimulationRunner.report(seed: 7, simulation: simulation, actions: actions, outcome: outcome, shrink: true)
        #expect(report.contains("seed 7: FAILED"))
        #expect(report.contains("smallest failing schedule"))
        #expect(report.contains("formsync-lab torture sim --first 7 --seeds 1 --trace"))
        // The same seed and schedule without the sabotage pass.
        #expect(await Simulation(seed: 7, folder: folder).run(actions).failures.isEmpty)
    }
}
