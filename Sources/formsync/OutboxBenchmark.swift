import CSQLite
import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncTesting
import Foundation

/// `formsync bench outbox`: enqueue and flush figures with the in-process transport, against a
/// raw SQLite insert at the same durability measured in the same run.
enum OutboxBenchmark {
    static func run(items: Int, lanes: Int, small: Int, concurrency: Int) async throws -> Int32 {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("formsync-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let sample = try FormRegistry.encode(order(customer: 1))

        let rawCount = min(items, 5000)
        let raw = try rawInserts(path: folder.appendingPathComponent("raw.sqlite").path, count: rawCount, payload: sample)
        print("outbox benchmark: \(items) items over \(lanes) lanes (in-process transport, concurrency \(concurrency))")
        print("  baseline: raw SQLite insert, own transaction, WAL + synchronous=FULL: \(micro(raw / Double(rawCount))) µs/item (\(rawCount) rows)")

        let smallLanes = max(1, lanes * small / max(items, 1))
        let (smallEnqueue, smallFlush) = try await measure(path: folder.appendingPathComponent("small.sqlite").path, items: small, lanes: smallLanes, concurrency: concurrency)
        let (bigEnqueue, bigFlush) = try await measure(path: folder.appendingPathComponent("big.sqlite").path, items: items, lanes: lanes, concurrency: concurrency)

        let enqueuePerItem = bigEnqueue / Double(items)
        print("  enqueue (validate, commit, group fdatasync): \(micro(enqueuePerItem)) µs/item, \(rate(items, bigEnqueue)) items/s; ratio to raw insert: \(ratio(enqueuePerItem, raw / Double(rawCount)))x")
        let smallPerItem = smallFlush / Double(small)
        let bigPerItem = bigFlush / Double(items)
        print("  flush at \(small) items / \(smallLanes) lanes: \(micro(smallPerItem)) µs/item (\(rate(small, smallFlush)) items/s)")
        print("  flush at \(items) items / \(lanes) lanes: \(micro(bigPerItem)) µs/item (\(rate(items, bigFlush)) items/s)")
        print("  per-item flush cost, \(items) vs \(small): \(ratio(bigPerItem, smallPerItem))x")
        _ = smallEnqueue
        return 0
    }

    static func order(customer: Int64) -> SalesOrder {
        SalesOrder(
            customerId: EntityRef(customer), orderDate: LocalDate("2026-11-30"),
            lines: [.init(sku: "AB-1234", quantity: 2, unitPrice: Money(minorUnits: 999, currency: "EUR"))])
    }

    static func measure(path: String, items: Int, lanes: Int, concurrency: Int) async throws -> (enqueue: Double, flush: Double) {
        let transport = ScriptedTransport(workspace: "bench")
        let outbox = try Outbox(
            path: path, forms: [SalesOrder.self], transport: transport,
            configuration: Outbox.Configuration(concurrency: concurrency))
        let enqueueStart = DispatchTime.now().uptimeNanoseconds
        for n in 0..<items {
            try await outbox.enqueue(order(customer: Int64(n % lanes + 1)))
            if n > 0 && n % 20_000 == 0 { printError("  … \(n) enqueued") }
        }
        let enqueue = seconds(since: enqueueStart)
        let flushStart = DispatchTime.now().uptimeNanoseconds
        let report = await outbox.flush()
        let flush = seconds(since: flushStart)
        guard report.sent == items, report.remaining == 0, transport.requests.count == items else {
            throw BenchmarkFailure(message: "flush did not deliver everything: \(report)")
        }
        return (enqueue, flush)
    }

    /// The same JSON inserted with the C API, one `BEGIN IMMEDIATE … COMMIT` per row.
    static func rawInserts(path: String, count: Int, payload: Data) throws -> Double {
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw BenchmarkFailure(message: "cannot open \(path)") }
        defer { sqlite3_close(db) }
        sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (id INTEGER PRIMARY KEY, lane TEXT, payload BLOB)", nil, nil, nil)
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
