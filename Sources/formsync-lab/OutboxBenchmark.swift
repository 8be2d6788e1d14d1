import CSQLite
import FieldForms
import FormSyncClient
import FormSyncCommandLine
import FormSyncModel
import FormSyncTesting
import Foundation

/// `formsync-lab bench outbox`: enqueue and flush figures with the in-process transport, against a
/// raw SQLite insert at the same durability measured in the same run.
enum OutboxBenchmark {
    static func run(items: Int, lanes: Int, small: Int, concurrencies: [Int], rounds: Int = 3, lines: Int = 1) async throws -> Int32 {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("formsync-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let sample = try FormRegistry.encode(order(customer: 1, lines: lines))

        let rawCount = min(items, 5000)
        let raw = try rawInserts(path: folder.appendingPathComponent("raw.sqlite").path, count: rawCount, payload: sample)
        print(
            "outbox benchmark: \(items) items over \(lanes) lanes, \(lines)-line order (\(sample.count) bytes of JSON); in-process transport, concurrency \(concurrencies.map(String.init).joined(separator: " and ")) (\(Outbox.Configuration().concurrency) is what an app gets by default)"
        )
        print(
            "  baseline: raw SQLite insert, own transaction, WAL + synchronous=FULL: \(micro(raw / Double(rawCount))) µs/item (\(rawCount) rows)"
        )

        // Both queues are built once; every round flushes fresh copies of them.
        let smallLanes = max(1, lanes * small / max(items, 1))
        let smallPath = folder.appendingPathComponent("small.sqlite").path
        let bigPath = folder.appendingPathComponent("big.sqlite").path
        _ = try await enqueue(path: smallPath, items: small, lanes: smallLanes, lines: lines)
        let bigEnqueue = try await enqueue(path: bigPath, items: items, lanes: lanes, lines: lines)
        let enqueuePerItem = bigEnqueue / Double(items)
        print(
            "  enqueue (validate, commit, group fdatasync), measured once: \(micro(enqueuePerItem)) µs/item, \(rate(items, bigEnqueue)) items/s; ratio to raw insert: \(ratio(enqueuePerItem, raw / Double(rawCount)))x"
        )

        func spread(_ values: [Double]) -> String {
            "\(micro(BenchCommand.median(values))) (\(micro(values.min()!))–\(micro(values.max()!)))"
        }
        func rates(_ values: [Double]) -> String {
            String(format: "%.0f (%.0f–%.0f)", 1 / BenchCommand.median(values), 1 / values.max()!, 1 / values.min()!)
        }
        // Every configuration in every round, in an order that turns each round.
        var smallPerItem: [Int: [Double]] = [:]
        var bigPerItem: [Int: [Double]] = [:]
        for round in 0..<rounds {
            for concurrency in round % 2 == 0 ? concurrencies : concurrencies.reversed() {
                if round % 2 == 0 {
                    smallPerItem[concurrency, default: []].append(
                        try await flush(copyOf: smallPath, round: round, items: small, concurrency: concurrency) / Double(small))
                    bigPerItem[concurrency, default: []].append(
                        try await flush(copyOf: bigPath, round: round, items: items, concurrency: concurrency) / Double(items))
                } else {
                    bigPerItem[concurrency, default: []].append(
                        try await flush(copyOf: bigPath, round: round, items: items, concurrency: concurrency) / Double(items))
                    smallPerItem[concurrency, default: []].append(
                        try await flush(copyOf: smallPath, round: round, items: small, concurrency: concurrency) / Double(small))
                }
            }
        }
        for concurrency in concurrencies {
            let smallRuns = smallPerItem[concurrency] ?? []
            let bigRuns = bigPerItem[concurrency] ?? []
            let ratios = zip(bigRuns, smallRuns).map { $0 / $1 }
            let label = concurrency == Outbox.Configuration().concurrency ? " (the default)" : ""
            print(
                "  flush at concurrency \(concurrency)\(label), µs per item and items/s, median (min–max) of \(rounds) interleaved rounds:")
            print("    \(small) items / \(smallLanes) lanes: \(spread(smallRuns)) µs; \(rates(smallRuns)) items/s")
            print("    \(items) items / \(lanes) lanes: \(spread(bigRuns)) µs; \(rates(bigRuns)) items/s")
            print(
                "    per-item flush cost, \(items) vs \(small): \(String(format: "%.2f", BenchCommand.median(bigRuns) / BenchCommand.median(smallRuns)))x (rounds \(String(format: "%.2f", ratios.min()!))–\(String(format: "%.2f", ratios.max()!)))"
            )
        }
        return 0
    }

    static func order(customer: Int64, lines: Int = 1) -> SalesOrder {
        lines == 1
            ? SalesOrder(
                customerId: EntityRef(customer), orderDate: LocalDate("2026-11-30"),
                lines: [.init(sku: "AB-1234", quantity: 2, unitPrice: Money(minorUnits: 999, currency: "EUR"))])
            : EnqueueBenchmark.order(customer: customer, lines: lines)
    }

    /// Seconds to enqueue `items` orders over `lanes` lanes into a new outbox at `path`.
    static func enqueue(path: String, items: Int, lanes: Int, lines: Int) async throws -> Double {
        let outbox = try Outbox(path: path, forms: [SalesOrder.self], transport: ScriptedTransport(workspace: "bench"))
        let start = DispatchTime.now().uptimeNanoseconds
        for n in 0..<items {
            try await outbox.enqueue(order(customer: Int64(n % lanes + 1), lines: lines))
            if n > 0 && n % 20_000 == 0 { printError("  … \(n) enqueued") }
        }
        return seconds(since: start)
    }

    /// Seconds to flush a fresh copy of the outbox at `path` (closed) through the instant transport.
    static func flush(copyOf path: String, round: Int, items: Int, concurrency: Int) async throws -> Double {
        let copy = path + ".round\(round)"
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: path + suffix) {
            try? FileManager.default.removeItem(atPath: copy + suffix)
            try FileManager.default.copyItem(atPath: path + suffix, toPath: copy + suffix)
            try syncToDisk(copy + suffix)
        }
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: copy + suffix) } }
        let transport = ScriptedTransport(workspace: "bench")
        let outbox = try Outbox(
            path: copy, forms: [SalesOrder.self], transport: transport, configuration: Outbox.Configuration(concurrency: concurrency))
        let start = DispatchTime.now().uptimeNanoseconds
        let report = await outbox.flush()
        let flush = seconds(since: start)
        guard report.sent == items, report.remaining == 0, transport.requests.count == items else {
            throw BenchmarkFailure(message: "flush did not deliver everything: \(report)")
        }
        return flush
    }

    /// Writes a copied file to disk before the clock starts. A device's outbox was fsynced as it
    /// was written; a fresh copy of one (100,000 items: about 50 MB) is dirty in the page cache,
    /// and its writeback, which ran during the timed flush, is not the flush's cost.
    static func syncToDisk(_ path: String) throws {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw BenchmarkFailure(message: "cannot open \(path) to sync it") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw BenchmarkFailure(message: "cannot sync \(path)") }
    }

    /// The same JSON inserted with the C API, one `BEGIN IMMEDIATE … COMMIT` per row.
    static func rawInserts(path: String, count: Int, payload: Data) throws -> Double {
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw BenchmarkFailure(message: "cannot open \(path)") }
        defer { sqlite3_close(db) }
        sqlite3_exec(
            db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (id INTEGER PRIMARY KEY, lane TEXT, payload BLOB)", nil,
            nil, nil)
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, "INSERT INTO t (lane, payload) VALUES (?, ?)", -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        let start = DispatchTime.now().uptimeNanoseconds
        for n in 0..<count {
            sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
            sqlite3_reset(statement)
            sqlite3_bind_text(statement, 1, "Customer:\(n % 100)", -1, transient)
            _ = payload.withUnsafeBytes { sqlite3_bind_blob(statement, 2, $0.baseAddress, Int32($0.count), transient) }
            guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchmarkFailure(message: "raw insert failed") }
            sqlite3_exec(db, "COMMIT", nil, nil, nil)
        }
        return seconds(since: start)
    }

    static func seconds(since start: UInt64) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    static func micro(_ seconds: Double) -> String { String(format: "%.1f", seconds * 1e6) }
    static func rate(_ count: Int, _ seconds: Double) -> String { String(format: "%.0f", Double(count) / seconds) }
    static func ratio(_ a: Double, _ b: Double) -> String { String(format: "%.2f", a / b) }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
