import CSQLite
import FieldForms
import FormSyncClient
import FormSyncCommandLine
import FormSyncModel
import FormSyncTesting
import Foundation
import Synchronization

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `formsync-lab bench cold-open`: an app started with a large queue. The queue is filled with N
/// 2 KB orders through `enqueue` once; then, in interleaved rounds, a fresh process opens the
/// outbox and flushes until the first request leaves (time and peak RSS), against a fresh
/// process that only opens the database with the C API and reads the first due row.
enum ColdOpenBenchmark {
    static func run(items: Int, rounds: Int) async throws -> Int32 {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("formsync-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("queue.sqlite").path
        let fillStart = DispatchTime.now().uptimeNanoseconds
        do {
            let outbox = try Outbox(path: path, forms: [SalesOrder.self], transport: ScriptedTransport(workspace: "bench"))
            let order = EnqueueBenchmark.order(customer: 1, lines: 10)
            for n in 0..<items {
                var copy = order
                copy.customerId = EntityRef(Int64(n % 10_000 + 1))
                try await outbox.enqueue(copy)
                if n > 0 && n % 20_000 == 0 { printError("  … \(n) enqueued") }
            }
        }
        let size = ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0) >> 20
        print(
            "cold-open benchmark: \(items) queued 10-line orders over 10,000 lanes (\(size) MiB database, filled in \(String(format: "%.0f", EnqueueBenchmark.seconds(since: fillStart))) s)"
        )
        let executable = try LabExecutables.own(toRun: "the cold-open child")
        var outboxTimes: [Double] = []
        var outboxRSS: [Double] = []
        var rawTimes: [Double] = []
        var rawRSS: [Double] = []
        var outboxSpawn: [Double] = []
        var rawSpawn: [Double] = []
        for round in 0..<rounds {
            for which in (round % 2 == 0 ? ["outbox", "raw"] : ["raw", "outbox"]) {
                let (ms, rss, fromSpawn) = try child(executable, which, path)
                if which == "outbox" {
                    outboxTimes.append(ms)
                    outboxRSS.append(rss)
                    outboxSpawn.append(fromSpawn)
                } else {
                    rawTimes.append(ms)
                    rawRSS.append(rss)
                    rawSpawn.append(fromSpawn)
                }
            }
        }
        func spread(_ v: [Double]) -> String { String(format: "%.1f (%.1f–%.1f)", BenchCommand.median(v), v.min()!, v.max()!) }
        print("  what a user pays: from the process's spawn (loading the binary and its libraries included) to the first request")
        print("  leaving (or the first due row read), ms, median (min–max) of \(rounds) interleaved rounds:")
        print("    baseline, C API open + first due row: \(spread(rawSpawn)) ms")
        print("    Outbox open + flush to the first send: \(spread(outboxSpawn)) ms")
        print("  the same from the process's main (what the process itself does):")
        print("    baseline, C API open + first due row: \(spread(rawTimes)) ms, peak RSS \(spread(rawRSS)) MB")
        print("    Outbox open + flush to the first send: \(spread(outboxTimes)) ms, peak RSS \(spread(outboxRSS)) MB")
        return 0
    }

    /// Runs one child; its time from main and peak RSS, and the time from the spawn (the
    /// monotonic clock both processes read) to its first request.
    static func child(_ executable: String, _ which: String, _ path: String) throws -> (Double, Double, Double) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["bench", "cold-open-child", which, path]
        let pipe = Pipe()
        process.standardOutput = pipe
        let spawned = DispatchTime.now().uptimeNanoseconds
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let parts = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
        guard process.terminationStatus == 0, parts.count == 3, parts[2] >= Double(spawned) else {
            throw BenchmarkFailure(message: "cold-open child failed: \(String(decoding: data, as: UTF8.self))")
        }
        return (parts[0], parts[1], (parts[2] - Double(spawned)) / 1e6)
    }

    /// In the child: milliseconds from here to the first request, peak RSS in MB, and the
    /// monotonic clock's reading (ns) at the first request.
    static func childRun(_ which: String, _ path: String) async throws -> Int32 {
        let start = DispatchTime.now().uptimeNanoseconds
        var elapsed = 0.0
        var stamp: UInt64 = 0
        if which == "raw" {
            var db: OpaquePointer?
            guard sqlite3_open(path, &db) == SQLITE_OK, let db else { return 1 }
            var statement: OpaquePointer?
            sqlite3_prepare_v2(
                db,
                "SELECT i.id, i.payload FROM lanes l JOIN items i ON i.id = l.head WHERE l.workspace = 'bench' AND l.due_at IS NOT NULL ORDER BY l.due_at LIMIT 1",
                -1, &statement, nil)
            guard sqlite3_step(statement) == SQLITE_ROW else { return 1 }
            _ = sqlite3_column_blob(statement, 1)
            stamp = DispatchTime.now().uptimeNanoseconds
            elapsed = EnqueueBenchmark.seconds(since: start) * 1000
            sqlite3_finalize(statement)
            sqlite3_close(db)
        } else {
            let first = FirstSend()
            let outbox = try Outbox(path: path, forms: [SalesOrder.self], transport: first)
            let flush = Task { await outbox.flush() }
            await first.wait()
            stamp = DispatchTime.now().uptimeNanoseconds
            elapsed = EnqueueBenchmark.seconds(since: start) * 1000
            flush.cancel()
        }
        print(String(format: "%.2f %.1f %llu", elapsed, ProcessUsage.peakMiB(), stamp))
        return 0
    }

    /// A transport that notes the first send and then waits (nothing is delivered).
    final class FirstSend: OutboxTransport, Sendable {
        let workspace = "bench"
        private let sent = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
        func send(_ request: OutboundRequest) async -> DeliveryOutcome {
            let waiters = sent.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.done = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
            try? await Task.sleep(for: .seconds(60))
            return .unreachable(reason: "benchmark")
        }
        func probe() async -> Bool { true }
        func wait() async {
            await withCheckedContinuation { continuation in
                let done = sent.withLock { state -> Bool in
                    if !state.done { state.waiters.append(continuation) }
                    return state.done
                }
                if done { continuation.resume() }
            }
        }
    }
}
