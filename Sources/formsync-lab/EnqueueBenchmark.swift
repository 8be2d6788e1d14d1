import CSQLite
import FieldForms
import FormSyncClient
import FormSyncCommandLine
import FormSyncModel
import FormSyncTesting
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `formsync-lab bench enqueue`: what saving a submission costs against what the disk allows, and
/// against the queue design the field reports started from.
///
/// 1. Sequential `enqueue` against a raw single-row `synchronous=FULL` commit of the same JSON
///    bytes (C API, prepared statements), for a one-line order and a 10-line 2 KB order, in
///    interleaved rounds (the order alternates each round), median and spread.
/// 2. `enqueue` from 4 concurrent tasks against the raw sequential commit.
/// 3. A naive queue (seeds 000 and 001: one JSON array in one file, rewritten and fsynced on
///    every change) against the outbox, per operation at N/10, N and 10×N queued items.
enum EnqueueBenchmark {
    /// CPU seconds this process has used, user and system, all threads (with `children`: its
    /// child processes waited for so far).
    static func processCPU(children: Bool = false) -> Double {
        ProcessUsage.cpuSeconds(children: children)
    }

    /// The benchmark's three parts; `--parts` names a comma-separated subset.
    enum Part: String, CaseIterable {
        case sequential, concurrent, naive, prepare
    }

    static func parts(_ text: String?) throws -> Set<Part> {
        guard let text else { return Set(Part.allCases) }
        var parts: Set<Part> = []
        for name in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let part = Part(rawValue: String(name)) else {
                throw UsageError(
                    "--parts takes a comma-separated list of sequential, concurrent, naive and prepare, not \"\(text.prefix(80))\"")
            }
            parts.insert(part)
        }
        return parts
    }

    static func run(items: Int, rounds: Int, parts: Set<Part> = Set(Part.allCases)) async throws -> Int32 {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("formsync-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let orders = [("one-line order", order(customer: 1, lines: 1)), ("10-line order", order(customer: 1, lines: 10))]
        print("enqueue benchmark: \(items) items per measurement, \(rounds) interleaved rounds; µs per item, median (min–max)")
        var file = 0
        func path() -> String {
            file += 1
            return folder.appendingPathComponent("db\(file).sqlite").path
        }
        for (label, sample) in orders where parts.contains(.sequential) {
            let bytes = try FormRegistry.encode(sample.recalculated())  // what the outbox stores
            var raw: [Double] = []
            var enqueue: [Double] = []
            var ratios: [Double] = []
            var rawCPU: [Double] = []
            var enqueueCPU: [Double] = []
            var rawBytes: [Double] = []
            var enqueueBytes: [Double] = []
            var floor: [Double] = []
            var floorCPU: [Double] = []
            for round in 0..<rounds {
                var r: (seconds: Double, cpu: Double, written: Int?) = (0, 0, nil)
                var e: (seconds: Double, fsyncs: Int, cpu: Double, written: Int?) = (0, 0, 0, nil)
                if round % 2 == 0 {
                    r = try measuredRawCommits(path: path(), count: items, payload: bytes)
                    e = try await measuredEnqueues(path: path(), count: items, order: sample, tasks: 1)
                } else {
                    e = try await measuredEnqueues(path: path(), count: items, order: sample, tasks: 1)
                    r = try measuredRawCommits(path: path(), count: items, payload: bytes)
                }
                let f = try measuredSchemaFloor(path: path(), count: items, payload: bytes)
                floor.append(f.seconds / Double(items))
                floorCPU.append(f.cpu / Double(items))
                raw.append(r.seconds / Double(items))
                enqueue.append(e.seconds / Double(items))
                ratios.append(r.seconds / e.seconds)
                rawCPU.append(r.cpu / Double(items))
                enqueueCPU.append(e.cpu / Double(items))
                if let raw = r.written, let enqueued = e.written {
                    rawBytes.append(Double(raw) / Double(items))
                    enqueueBytes.append(Double(enqueued) / Double(items))
                }
            }
            print("  \(label) (\(bytes.count) bytes of JSON):")
            print("    raw FULL single-row commit of the same bytes: \(spread(raw))")
            print("    enqueue (validate, digest, encode, lane, commit + group fdatasync): \(spread(enqueue))")
            print(
                "    enqueue rate / raw rate: \(ratio(median(raw) / median(enqueue))) (per round \(ratio(ratios.min()!))–\(ratio(ratios.max()!)))"
            )
            print("    CPU per item (all threads, user + system): raw \(spread(rawCPU)), enqueue \(spread(enqueueCPU))")
            print(
                "    the enqueue's own statements (resolved-id look-up, item, document digest, lane) in the outbox's schema, raw C, FULL commit: \(spread(floor)), CPU \(spread(floorCPU)); rate / raw rate: \(ratio(median(raw) / median(floor))), the schema's floor"
            )
            if rawBytes.isEmpty {
                print("    bytes written per item: not measured on this system (only Linux counts them)")
            } else {
                print(
                    "    bytes written per item (every write and pwrite: log, database, checkpoints): raw \(kilobytes(rawBytes)), enqueue \(kilobytes(enqueueBytes))"
                )
            }
        }

        let (_, big) = orders[1]
        let bytes = try FormRegistry.encode(big.recalculated())
        if parts.contains(.prepare) { try prepare(order: big, items: items, rounds: rounds) }
        if parts.contains(.concurrent) { try await concurrent(items: items, rounds: rounds, big: big, bytes: bytes, path: path) }
        if parts.contains(.naive) { try await naive(items: items, big: big, bytes: bytes, path: path) }
        return 0
    }

    /// Concurrent enqueue: 4 tasks into one outbox, against the raw sequential commit.
    static func concurrent(items: Int, rounds: Int, big: SalesOrder, bytes: Data, path: () -> String) async throws {
        var raw: [Double] = []
        var concurrent: [Double] = []
        var sharing: [Double] = []
        var cpu: [Double] = []
        for round in 0..<rounds {
            var run: (seconds: Double, fsyncs: Int, cpu: Double, written: Int?) = (0, 0, 0, nil)
            if round % 2 == 0 {
                raw.append(try rawCommits(path: path(), count: items, payload: bytes) / Double(items))
                run = try await measuredEnqueues(path: path(), count: items, order: big, tasks: 4)
            } else {
                run = try await measuredEnqueues(path: path(), count: items, order: big, tasks: 4)
                raw.append(try rawCommits(path: path(), count: items, payload: bytes) / Double(items))
            }
            concurrent.append(run.seconds / Double(items))
            sharing.append(Double(items) / Double(max(1, run.fsyncs)))
            cpu.append(run.cpu / Double(items))
        }
        print(
            "  10-line order, enqueue from 4 concurrent tasks: \(spread(concurrent)); rate / raw sequential rate: \(ratio(median(raw) / median(concurrent))); commits per log fsync \(String(format: "%.2f", median(sharing))); CPU per item (all threads, user + system) \(spread(cpu))"
        )

    }

    /// The work an enqueue does before it needs the database, piece by piece, for the 2 KB
    /// order: what the commit's time is compared against when the ratio is read.
    static func prepare(order: SalesOrder, items: Int, rounds: Int) throws {
        var recalculate: [Double] = []
        var validate: [Double] = []
        var encode: [Double] = []
        var digest: [Double] = []
        var failures = 0
        var bytes = 0
        var order = order
        for _ in 0..<rounds {
            // What the outbox does first: the lines' totals and the order's (`calculate:`).
            var start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<items { order = order.recalculated() }
            recalculate.append(seconds(since: start) / Double(items))
            start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<items { failures += order.validate().count }
            validate.append(seconds(since: start) / Double(items))
            var json = Data()
            start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<items { json = try FormRegistry.encode(order) }
            encode.append(seconds(since: start) / Double(items))
            start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<items { bytes += submissionDigest(json).count }
            digest.append(seconds(since: start) / Double(items))
        }
        guard failures == 0, bytes == 32 * items * rounds else { throw BenchmarkFailure(message: "the sample order does not validate") }
        print(
            "  10-line order, before the commit, µs per item: recalculate \(spread(recalculate)); validate \(spread(validate)); encode \(spread(encode)); digest \(spread(digest))"
        )
    }

    /// What identifies a submission of the order, as the outbox digests it (form, version, no
    /// base, the payload's bytes).
    static func submissionDigest(_ json: Data) -> Data {
        var hasher = SHA256()
        hasher.update(Data("SalesOrder\n1\n\n".utf8))
        hasher.update(json)
        return hasher.finalize()
    }

    /// The naive queue against the outbox, per operation, as the queue grows: a tenth of
    /// `items`, `items`, and ten times `items` queued (100, 1,000 and 10,000 by default).
    static func naive(items: Int, big: SalesOrder, bytes: Data, path: () -> String) async throws {
        print(
            "  naive queue (one JSON array in one file, rewritten + fsynced per change) against the outbox, 10-line order, µs per operation:"
        )
        print("    queued   naive add   naive remove   outbox enqueue   outbox send+confirm (instant transport)")
        for size in [max(10, items / 10), items, items * 10] {
            var naiveAdd: [Double] = []
            var naiveRemove: [Double] = []
            var outboxAdd: [Double] = []
            var outboxFlush: [Double] = []
            for _ in 0..<3 {
                let (add, remove) = try naive(path: path(), queued: size, payload: bytes, operations: 20)
                naiveAdd.append(add)
                naiveRemove.append(remove)
                let (enq, flush) = try await outboxAtSize(path: path(), queued: size, order: big, operations: 20)
                outboxAdd.append(enq)
                outboxFlush.append(flush)
            }
            print(
                "    \(String(size).padding(toLength: 8, withPad: " ", startingAt: 0)) \(micro(median(naiveAdd)).padding(toLength: 11, withPad: " ", startingAt: 0)) \(micro(median(naiveRemove)).padding(toLength: 14, withPad: " ", startingAt: 0)) \(micro(median(outboxAdd)).padding(toLength: 16, withPad: " ", startingAt: 0)) \(micro(median(outboxFlush)))"
            )
        }
    }

    static func order(customer: Int64, lines: Int) -> SalesOrder {
        SalesOrder(
            customerId: EntityRef(customer), orderDate: LocalDate("2026-11-30"), paymentTermsDays: 30,
            customerReference: "PO-2026-11-30-0042",
            lines: (0..<lines).map { n in
                .init(
                    sku: "SKU-\(10_000 + n)", quantity: 1 + n % 12, unitPrice: Money(minorUnits: Int64(1999 + n * 250), currency: "EUR"),
                    note: lines > 1
                        ? "Deliver with the pallet of line \(n + 1); fragile, keep upright, signed receipt needed at the door." : nil)
            })
    }

    /// Seconds for `count` enqueues into a fresh outbox, from `tasks` concurrent tasks.
    static func enqueues(path: String, count: Int, order: SalesOrder, tasks: Int) async throws -> Double {
        try await measuredEnqueues(path: path, count: count, order: order, tasks: tasks).seconds
    }

    /// `enqueues`, with the log fsyncs it took and the process's CPU time (all threads) meanwhile.
    static func measuredEnqueues(
        path: String, count: Int, order: SalesOrder, tasks: Int
    ) async throws -> (seconds: Double, fsyncs: Int, cpu: Double, written: Int?) {
        let outbox = try Outbox(path: path, forms: [SalesOrder.self], transport: ScriptedTransport(workspace: "bench"))
        for n in 0..<warmUp {
            var copy = order
            copy.customerId = EntityRef(Int64(n % 100 + 1))
            try await outbox.enqueue(copy)
        }
        let fsyncsBefore = outbox.walSync.fsyncCount
        let writtenBefore = ProcessUsage.bytesWritten()
        let cpuStart = processCPU()
        let start = DispatchTime.now().uptimeNanoseconds
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var n = task
                    while n < count {
                        var copy = order
                        copy.customerId = EntityRef(Int64(n % 100 + 1))
                        try await outbox.enqueue(copy)
                        n += tasks
                    }
                }
            }
            try await group.waitForAll()
        }
        let written = ProcessUsage.bytesWritten(since: writtenBefore)
        return (seconds(since: start), outbox.walSync.fsyncCount - fsyncsBefore, processCPU() - cpuStart, written)
    }

    /// Commits made, untimed, before each timed run, raw and outbox alike. A new database's log
    /// grows through its first checkpoint cycle (1,000 pages), and an fsync of a growing file
    /// also writes its inode: without the warm-up the raw commit (2 pages each) spent its first
    /// 500 commits there and the outbox (about 9 pages) its first 110, so the ratio depended on
    /// how many items were timed (the fewer, the more it flattered the outbox). With the warm-up
    /// both are timed with the log in its steady state: reused from its start after each
    /// checkpoint.
    static let warmUp = 1000

    /// Seconds for `count` raw single-row commits in WAL mode with synchronous=FULL.
    static func rawCommits(path: String, count: Int, payload: Data) throws -> Double {
        try measuredRawCommits(path: path, count: count, payload: payload).seconds
    }

    /// `rawCommits`, with the process's CPU time (all threads) meanwhile.
    static func measuredRawCommits(path: String, count: Int, payload: Data) throws -> (seconds: Double, cpu: Double, written: Int?) {
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw BenchmarkFailure(message: "cannot open \(path)") }
        defer { sqlite3_close(db) }
        sqlite3_exec(
            db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (id INTEGER PRIMARY KEY, lane TEXT, payload BLOB)", nil,
            nil, nil)
        var insert: OpaquePointer?
        var begin: OpaquePointer?
        var commit: OpaquePointer?
        sqlite3_prepare_v2(db, "INSERT INTO t (lane, payload) VALUES (?, ?)", -1, &insert, nil)
        sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, nil)
        sqlite3_prepare_v2(db, "COMMIT", -1, &commit, nil)
        defer {
            sqlite3_finalize(insert)
            sqlite3_finalize(begin)
            sqlite3_finalize(commit)
        }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        var start = DispatchTime.now().uptimeNanoseconds
        var cpuStart = processCPU()
        var writtenBefore = ProcessUsage.bytesWritten()
        for n in -warmUp..<count {
            if n == 0 {
                writtenBefore = ProcessUsage.bytesWritten()
                cpuStart = processCPU()
                start = DispatchTime.now().uptimeNanoseconds
            }
            sqlite3_reset(begin)
            guard sqlite3_step(begin) == SQLITE_DONE else { throw BenchmarkFailure(message: "raw BEGIN failed") }
            sqlite3_reset(insert)
            sqlite3_bind_text(insert, 1, "customer_id:\(n % 100 + 1)", -1, transient)
            _ = payload.withUnsafeBytes { sqlite3_bind_blob(insert, 2, $0.baseAddress, Int32($0.count), transient) }
            guard sqlite3_step(insert) == SQLITE_DONE else { throw BenchmarkFailure(message: "raw insert failed") }
            sqlite3_reset(commit)
            guard sqlite3_step(commit) == SQLITE_DONE else { throw BenchmarkFailure(message: "raw COMMIT failed") }
        }
        let written = ProcessUsage.bytesWritten(since: writtenBefore)
        return (seconds(since: start), processCPU() - cpuStart, written)
    }

    /// What an enqueue's commit costs with nothing of FormSync around it: the four statements
    /// an enqueue of this order runs (the lane's resolved-id look-up, the item with the
    /// outbox's id rule, the document digest, the lane), in the schema an outbox creates, with
    /// the C API and prepared statements, one FULL commit each; random document and attempt
    /// ids as the outbox mints them. The gap between this and the raw single-row commit is the
    /// schema's (its indexes and rows); the gap between this and `enqueue` is FormSync's.
    static func measuredSchemaFloor(path: String, count: Int, payload: Data) throws -> (seconds: Double, cpu: Double) {
        // The schema, made by an outbox and closed again.
        _ = try Outbox(path: path, forms: [SalesOrder.self], transport: ScriptedTransport(workspace: "bench"))
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw BenchmarkFailure(message: "cannot open \(path)") }
        defer { sqlite3_close(db) }
        sqlite3_exec(
            db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA cache_size=-16384", nil, nil, nil)
        let texts = [
            "BEGIN IMMEDIATE", "COMMIT", "SELECT placeholder FROM resolved WHERE workspace = ? AND server_id = ?",
            """
            INSERT INTO items (id, kind, workspace, lane, document_id, attempt_id, form, form_version, payload, state, next_attempt_at,
                created_at, updated_at)
            VALUES (
                MAX(COALESCE((SELECT MAX(id) FROM items), 0), COALESCE((SELECT value FROM outbox_counters WHERE name = 'items'), 0)) + 1,
                'submission', 'bench', ?, ?, ?, 'SalesOrder', 1, ?, 'pending', ?, ?, ?)
            """,
            "INSERT OR REPLACE INTO documents (workspace, document_id, digest, item_id) VALUES ('bench', ?, ?, ?)",
            "INSERT OR IGNORE INTO lanes (workspace, lane, head, due_at) VALUES ('bench', ?, ?, ?)",
        ]
        var statements: [OpaquePointer] = []
        defer { for statement in statements { sqlite3_finalize(statement) } }
        for text in texts {
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(db, text, -1, &statement, nil) == SQLITE_OK, let statement else {
                throw BenchmarkFailure(message: "the outbox's schema changed: \(String(cString: sqlite3_errmsg(db)))")
            }
            statements.append(statement)
        }
        let (begin, commit, resolved, item, document, lane) = (
            statements[0], statements[1], statements[2], statements[3], statements[4], statements[5]
        )
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        func step(_ statement: OpaquePointer, _ what: String) throws {
            let rc = sqlite3_step(statement)
            guard rc == SQLITE_DONE || rc == SQLITE_ROW else {
                throw BenchmarkFailure(message: "raw \(what) failed: \(String(cString: sqlite3_errmsg(db)))")
            }
            sqlite3_reset(statement)
        }
        var start = DispatchTime.now().uptimeNanoseconds
        var cpuStart = processCPU()
        for n in -warmUp..<count {
            if n == 0 {
                cpuStart = processCPU()
                start = DispatchTime.now().uptimeNanoseconds
            }
            let customer = Int64(n.magnitude % 100 + 1)
            let laneName = "customer_id:\(customer)"
            let documentID = UUID().uuidString
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let digestBytes = submissionDigest(payload)
            try step(begin, "BEGIN")
            sqlite3_bind_text(resolved, 1, "bench", -1, transient)
            sqlite3_bind_int64(resolved, 2, customer)
            try step(resolved, "look-up")
            sqlite3_bind_text(item, 1, laneName, -1, transient)
            sqlite3_bind_text(item, 2, documentID, -1, transient)
            sqlite3_bind_text(item, 3, UUID().uuidString, -1, transient)
            _ = payload.withUnsafeBytes { sqlite3_bind_blob(item, 4, $0.baseAddress, Int32($0.count), transient) }
            for index in Int32(5)...7 { sqlite3_bind_int64(item, index, now) }
            try step(item, "item insert")
            let id = sqlite3_last_insert_rowid(db)
            sqlite3_bind_text(document, 1, documentID, -1, transient)
            _ = digestBytes.withUnsafeBytes { sqlite3_bind_blob(document, 2, $0.baseAddress, Int32($0.count), transient) }
            sqlite3_bind_int64(document, 3, id)
            try step(document, "document insert")
            sqlite3_bind_text(lane, 1, laneName, -1, transient)
            sqlite3_bind_int64(lane, 2, id)
            sqlite3_bind_int64(lane, 3, now)
            try step(lane, "lane insert")
            try step(commit, "COMMIT")
        }
        let elapsed = seconds(since: start)
        let cpu = processCPU() - cpuStart
        var counted: OpaquePointer?
        defer { sqlite3_finalize(counted) }
        sqlite3_prepare_v2(db, "SELECT (SELECT COUNT(*) FROM items) + (SELECT COUNT(*) FROM documents)", -1, &counted, nil)
        guard sqlite3_step(counted) == SQLITE_ROW, sqlite3_column_int64(counted, 0) == Int64(2 * (warmUp + count)) else {
            throw BenchmarkFailure(message: "the schema's floor did not store an item and a document per commit")
        }
        return (elapsed, cpu)
    }

    /// The naive queue: one JSON array of base64 payloads, rewritten and fsynced on every
    /// change. Seconds per add and per remove (of the head) with `queued` items in it.
    static func naive(path: String, queued: Int, payload: Data, operations: Int) throws -> (add: Double, remove: Double) {
        var queue = [String](repeating: payload.base64EncodedString(), count: queued)
        func save() throws {
            let data = try JSONSerialization.data(withJSONObject: queue)
            let temporary = path + ".tmp"
            guard FileManager.default.createFile(atPath: temporary, contents: data) else {
                throw BenchmarkFailure(message: "cannot write \(temporary)")
            }
            let fd = open(temporary, O_RDONLY)
            fsync(fd)
            close(fd)
            rename(temporary, path)
        }
        try save()
        var start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<operations {
            queue.append(payload.base64EncodedString())
            try save()
        }
        let add = seconds(since: start) / Double(operations)
        start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<operations {
            queue.removeFirst()
            try save()
        }
        return (add, seconds(since: start) / Double(operations))
    }

    /// The outbox with `queued` items in it: seconds per enqueue, then per item sent and
    /// confirmed through the instant transport (a flush of `operations` items).
    static func outboxAtSize(path: String, queued: Int, order: SalesOrder, operations: Int) async throws -> (add: Double, flush: Double) {
        let transport = ScriptedTransport(workspace: "bench")
        let outbox = try Outbox(
            path: path, forms: [SalesOrder.self], transport: transport, configuration: Outbox.Configuration(concurrency: 4))
        for n in 0..<queued {
            var copy = order
            copy.customerId = EntityRef(Int64(n % 1000 + 1))
            try await outbox.enqueue(copy)
        }
        let start = DispatchTime.now().uptimeNanoseconds
        for n in 0..<operations {
            var copy = order
            copy.customerId = EntityRef(Int64(1_000_000 + n))
            try await outbox.enqueue(copy)
        }
        let add = seconds(since: start) / Double(operations)
        let flushStart = DispatchTime.now().uptimeNanoseconds
        let report = await outbox.flush()
        let flush = seconds(since: flushStart) / Double(max(1, report.sent))
        guard report.sent == queued + operations else { throw BenchmarkFailure(message: "flush did not deliver everything: \(report)") }
        return (add, flush)
    }

    /// Bytes per item, median and spread, in KB.
    static func kilobytes(_ values: [Double]) -> String {
        String(format: "%.1f KB (%.1f–%.1f)", BenchCommand.median(values) / 1000, values.min()! / 1000, values.max()! / 1000)
    }

    static func spread(_ values: [Double]) -> String {
        "\(micro(median(values))) (\(micro(values.min()!))–\(micro(values.max()!)))"
    }

    static func median(_ values: [Double]) -> Double { BenchCommand.median(values) }

    static func seconds(since start: UInt64) -> Double { OutboxBenchmark.seconds(since: start) }
    static func micro(_ seconds: Double) -> String { OutboxBenchmark.micro(seconds) }
    static func ratio(_ value: Double) -> String { String(format: "%.2f×", value) }
}
