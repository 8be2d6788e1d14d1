import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import FormSyncTorture
import Foundation

/// `formsync-lab bench live`: how long a change committed on one node of a PostgreSQL cluster
/// takes to reach a device long-polling another node (the sequencer's NOTIFY heard by the other
/// node's listener), against the same change committed on the node the device waits on (its
/// own wake-up, no database signal), interleaved, per change: from just before the back office's
/// write to the device's pull having stored the record. A device that polls instead sees a
/// change half its poll interval late on average (150 s at the engine's default 300 s).
enum LiveChangesBenchmark {
    static func run(changes: Int, rounds: Int, database: String?) async throws -> Int32 {
        let databases = try ClusterBenchmark.Databases(url: database)
        defer { databases.dropAll() }
        print(
            "live changes: \(changes) changes per round and leg to a device long-polling node B of two nodes on one PostgreSQL database\(database == nil ? " (a throwaway cluster on this machine)" : ""), \(rounds) rounds, legs interleaved"
        )
        var other: [[Double]] = []
        var same: [[Double]] = []
        for round in 1...rounds {
            let url = try databases.make()
            let nodes = try (0..<2).map { _ in
                try TestStore.postgresServer(url: url, forms: FormCatalog.forms, records: FormCatalog.records)
            }
            for node in nodes { _ = try node.start() }
            defer { for node in nodes { node.stop() } }
            let token = try nodes[1].issueAccessToken(principal: "ada", workspaces: ["acme"])
            let transport = HTTPTransport(workspace: "acme", baseURL: nodes[1].baseURL, timeout: .seconds(30)) { token }
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("live-bench-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let outbox = try Outbox(
                path: folder.appendingPathComponent("device.sqlite").path, forms: FormCatalog.forms, records: FormCatalog.records,
                transport: transport)
            _ = try await outbox.pull()
            var fromA: [Double] = []
            var fromB: [Double] = []
            for n in 0..<(2 * changes) {
                // Alternating legs: the change committed on node A, then on node B itself.
                let writer = nodes[n % 2 == 0 ? 0 : 1]
                let held = Task { try await outbox.pull(wait: .seconds(20)) }
                while nodes[1].feedWaiters.count == 0 { try await Task.sleep(for: .milliseconds(1)) }
                let start = DispatchTime.now().uptimeNanoseconds
                _ = try writer.putRecord(
                    Delivery(courierId: "ada", status: .assigned, stopOrder: n + 1, address: "Rua \(n)"), workspace: "acme")
                let report = try await held.value
                let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                guard report.upserted == 1 else { throw BenchmarkFailure(message: "change \(n) did not arrive: \(report)") }
                if n % 2 == 0 { fromA.append(seconds) } else { fromB.append(seconds) }
            }
            other.append(fromA)
            same.append(fromB)
            print(
                "  round \(round): committed on node A: p50 \(ms(percentile(fromA, 0.5))), p99 \(ms(percentile(fromA, 0.99))); on node B: p50 \(ms(percentile(fromB, 0.5))), p99 \(ms(percentile(fromB, 0.99)))"
            )
        }
        func summary(_ rounds: [[Double]], _ p: Double) -> String {
            let values = rounds.map { percentile($0, p) }
            return "\(ms(BenchCommand.median(values))) (\(ms(values.min()!))–\(ms(values.max()!)))"
        }
        print("committed on node A, device waiting on node B (median of rounds, spread):")
        print("  p50 \(summary(other, 0.5)), p99 \(summary(other, 0.99))")
        print("committed on node B itself (baseline: no database signal):")
        print("  p50 \(summary(same, 0.5)), p99 \(summary(same, 0.99))")
        let all = other.flatMap { $0 }
        print("slowest of \(all.count) changes from node A: \(ms(all.max() ?? 0)); a device polling every 300 s: 150,000 ms on average")
        return 0
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }

    static func ms(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }
}
