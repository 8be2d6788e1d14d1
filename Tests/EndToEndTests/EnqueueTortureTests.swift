import Foundation
import Testing

/// The short run of the enqueue harness (`formsync-lab torture enqueue`): a process enqueueing from
/// four tasks at once, so that enqueues share transactions, SIGKILLed 20 times and restarted.
struct EnqueueTortureTests {
    @Test func batchedEnqueuesKilledTwentyTimesLoseNothingAndStoreNothingTwice() async throws {
        let binary = DemoProcessTests.lab
        try #require(FileManager.default.isExecutableFile(atPath: binary.path), "build the lab first (swift build)")
        let run = try await ProcessRunner.run(binary, ["torture", "enqueue", "--kills", "20", "--seed", "20261202", "--count", "100"])
        #expect(run.status == 0, "\(run.output)\n\(run.errors.suffix(6000))")
        #expect(run.output.contains("checks: all held"), "\(run.output)")
        let kills = try #require(run.output.split(separator: "\n").first { $0.hasPrefix("kills: ") })
        #expect(Int(kills.split(separator: " ")[1]) ?? 0 >= 10, "most runs were killed mid-way: \(kills)")
        let outbox = try #require(run.output.split(separator: "\n").first { $0.hasPrefix("outbox: ") })
        #expect(outbox.hasPrefix("outbox: 400 documents"), "\(outbox)")
    }
}
