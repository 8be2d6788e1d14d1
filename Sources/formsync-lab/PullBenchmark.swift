import CSQLite
import FieldForms
import FormSyncClient
import FormSyncCommandLine
import FormSyncModel
import FormSyncSQLite
import FormSyncServer
import Foundation
import Synchronization

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `formsync-lab bench pull`: the initial pull of N records by a device process over loopback HTTP
/// from the embedded server, against raw SQLite inserts of the same rows in the same run
/// (interleaved, median and spread of R rounds), with the device process's peak RSS; then the
/// cost of pulling a delta of D changes on the N-record store against the same delta on a
/// store of S records.
enum PullBenchmark {
    static func run(records: Int, rounds: Int, delta: Int, small: Int) async throws -> Int32 {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("formsync-pull-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try SyncServer(
            directory: folder.appendingPathComponent("server").path, forms: FormCatalog.forms, records: FormCatalog.records)
        _ = try server.start()
        defer { server.stop() }

        // The records: deliveries of one courier, about 300 bytes of JSON each.
        var payloads: [Data] = []
        for workspace in ["big", "small"] {
            let count = workspace == "big" ? records : small
            for start in stride(from: 0, to: count, by: 10_000) {
                let seeds = try (start..<min(count, start + 10_000)).map { n -> SyncServer.RecordSeed in
                    let fields = try FormRegistry.encode(delivery(n, note: "first"))
                    if workspace == "big" && payloads.count < 3 { payloads.append(fields) }
                    return SyncServer.RecordSeed(type: "Delivery", fields: fields, workspace: workspace)
                }
                try server.putRecords(seeds)
            }
        }
        let sample = payloads.first ?? Data()
        // One record, for a device process's fixed cost: start, credentials, the first page.
        try server.putRecords([SyncServer.RecordSeed(type: "Delivery", fields: sample, workspace: "one")])
        let refreshToken = try server.issueRefreshToken(principal: "ada", workspaces: ["big", "small", "one"])
        print(
            "pull benchmark: \(records) Delivery records (\(sample.count) bytes of JSON each) for one courier, \(rounds) rounds interleaved"
        )

        // 1. Initial pull in a device process, against raw inserts of the same rows.
        var raw: [Double] = []
        var rawBatched: [Double] = []
        var rawIndexed: [Double] = []
        var pull: [Double] = []
        var fixed: [Double] = []
        var deviceCPU: [Double] = []
        var serverCPU: [Double] = []
        var pulledPath = ""
        for round in 0..<rounds {
            raw.append(try rawInserts(path: folder.appendingPathComponent("raw-\(round).sqlite").path, count: records, payload: sample))
            rawBatched.append(
                try rawInserts(
                    path: folder.appendingPathComponent("raw-batched-\(round).sqlite").path, count: records, payload: sample,
                    perStatement: 64))
            rawIndexed.append(
                try rawInserts(
                    path: folder.appendingPathComponent("raw-indexed-\(round).sqlite").path, count: records, payload: sample, indexed: true,
                    perStatement: 64, perTransaction: 5000)
            )
            pulledPath = folder.appendingPathComponent("device-\(round).sqlite").path
            let before = EnqueueBenchmark.processCPU(children: true)
            let serverBefore = EnqueueBenchmark.processCPU()
            pull.append(try devicePull(db: pulledPath, server: server, refreshToken: refreshToken, expect: records))
            deviceCPU.append(EnqueueBenchmark.processCPU(children: true) - before)
            serverCPU.append(EnqueueBenchmark.processCPU() - serverBefore)
            fixed.append(
                try devicePull(
                    db: folder.appendingPathComponent("one-\(round).sqlite").path, server: server, refreshToken: refreshToken, expect: 1,
                    workspace: "one"))
        }
        let peakMiB = ProcessUsage.peakMiB(children: true)
        print("  baseline: raw SQLite inserts of the same rows, 1000 per transaction, WAL + synchronous=NORMAL:")
        print("            \(spread(raw)), \(rate(records, median(raw))) records/s")
        print("  the same rows 64 to a statement (for reference; the ratios are against the baseline above):")
        print(
            "            \(spread(rawBatched)), \(rate(records, median(rawBatched))) records/s; rate / raw insert rate: \(String(format: "%.2f", median(raw) / median(rawBatched)))×"
        )
        print(
            "  the floor of the pull's own schema: the rows with the outbox's two keys per Delivery (status, stop_order), 64 to a statement and 5,000 to a transaction as the pull writes them, and their indexes built at the end:"
        )
        print(
            "            \(spread(rawIndexed)), \(rate(records, median(rawIndexed))) records/s; rate / raw insert rate: \(String(format: "%.2f", median(raw) / median(rawIndexed)))×"
        )
        print(
            "  initial pull, device process over loopback HTTP, default configuration (compact pages: the first of 1,000, then of 5,000, fetched and read ahead; each page and its cursor one transaction, its records 64 to a statement, key indexes built at its end):"
        )
        print(
            "            \(spread(pull)), \(rate(records, median(pull))) records/s; rate / raw insert rate: \(String(format: "%.2f", median(raw) / median(pull)))× (per round \(perRound(raw: raw, pull: pull)))"
        )
        print(
            "  device process CPU (user + system) per record: \(String(format: "%.1f", median(deviceCPU) / Double(records) * 1e6)) µs (median of the rounds)"
        )
        print(
            "  the server's CPU (this process, while the device pulls) per record: \(String(format: "%.1f", median(serverCPU) / Double(records) * 1e6)) µs; the two cores' time per record at the pull's median: \(String(format: "%.1f", 2 * median(pull) / Double(records) * 1e6)) µs"
        )
        print("  device process peak RSS (largest of the \(rounds) pulls): \(String(format: "%.1f", peakMiB)) MiB")
        print("  a device process's fixed cost, the same pull of a workspace of 1 record (start, credentials, first page):")
        print("            \(spread(fixed))")
        let floor = median(rawIndexed) + median(fixed)
        print(
            "  the pull's floor here, the schema's floor plus that fixed cost: \(String(format: "%.0f", floor * 1000)) ms; rate / raw insert rate: \(String(format: "%.2f", median(raw) / floor))×"
        )

        // 2. Deltas: D changes on the N-record store against D changes on the S-record store.
        let token = Mutex<String?>(try server.issueAccessToken(principal: "ada", workspaces: ["big", "small"]))
        func outbox(_ path: String, workspace: String) throws -> Outbox {
            let transport = HTTPTransport(workspace: workspace, baseURL: server.baseURL, timeout: .seconds(30)) { token.withLock { $0 } }
            return try Outbox(path: path, forms: FormCatalog.forms, records: FormCatalog.records, transport: transport)
        }
        let bigStore = try outbox(pulledPath, workspace: "big")
        let smallStore = try outbox(folder.appendingPathComponent("small.sqlite").path, workspace: "small")
        guard try await smallStore.pull(pageSize: 1000).caughtUp else {
            throw BenchmarkFailure(message: "the small store did not catch up")
        }
        var bigDeltas: [Double] = []
        var smallDeltas: [Double] = []
        for round in 0..<max(rounds, 5) {
            for (workspace, count, store) in [("small", small, smallStore), ("big", records, bigStore)] {
                // The back office changes D records spread over the store, then the device pulls.
                let step = max(1, count / delta)
                var seeds: [SyncServer.RecordSeed] = []
                for k in 0..<min(delta, count) {
                    let n = (k * step + round) % count
                    seeds.append(
                        SyncServer.RecordSeed(
                            type: "Delivery", id: Int64(n) + (workspace == "big" ? 1 : Int64(records) + 1),
                            fields: try FormRegistry.encode(delivery(n, note: "round \(round)")), workspace: workspace))
                }
                try server.putRecords(seeds)
                let start = DispatchTime.now().uptimeNanoseconds
                let report = try await store.pull(pageSize: 1000)
                let elapsed = OutboxBenchmark.seconds(since: start)
                guard report.caughtUp, report.upserted == seeds.count else {
                    throw BenchmarkFailure(message: "delta pull on \(workspace): \(report)")
                }
                if workspace == "big" { bigDeltas.append(elapsed) } else { smallDeltas.append(elapsed) }
            }
        }
        print("  delta of \(delta) changes, \(bigDeltas.count) rounds interleaved:")
        print("            on a \(small)-record store: \(spread(smallDeltas))")
        print(
            "            on a \(records)-record store: \(spread(bigDeltas)); ratio: \(String(format: "%.2f", median(bigDeltas) / median(smallDeltas)))x"
        )
        return 0
    }

    static func delivery(_ n: Int, note: String) -> Delivery {
        Delivery(
            courierId: "ada", status: .assigned, stopOrder: n + 1,
            address: "Rua das Flores \(n), 1200-\(String(format: "%03d", n % 1000)) Lisboa",
            recipient: "Recipient \(n)", codAmount: Money(minorUnits: Int64(n % 50_000), currency: "EUR"),
            notes: "Ring twice; leave parcel \(n) with the concierge if nobody answers (\(note)).")
    }

    /// Runs `formsync demo-device --pull-only` on a fresh database; its wall time.
    static func devicePull(db: String, server: SyncServer, refreshToken: String, expect: Int, workspace: String = "big") throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try LabExecutables.formsync())
        process.arguments = [
            "demo-device", "--pull-only", "--db", db, "--server", server.baseURL.absoluteString, "--refresh-token", refreshToken,
            "--workspace", workspace, "--timeout", "60", "--lease-ms", "120000",
        ]
        let output = Pipe()
        process.standardOutput = output
        let start = DispatchTime.now().uptimeNanoseconds
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let elapsed = OutboxBenchmark.seconds(since: start)
        guard process.terminationStatus == 0, text.contains("caught up") else {
            throw BenchmarkFailure(message: "the device pull failed (exit \(process.terminationStatus)): \(text.suffix(400))")
        }
        // Counted once the process has ended, outside the time measured.
        let stored = try storedRecords(db: db)
        guard stored == expect else { throw BenchmarkFailure(message: "the device pull stored \(stored) records, not \(expect)") }
        return elapsed
    }

    /// How many records a device's database holds.
    static func storedRecords(db path: String) throws -> Int {
        Int(try SQLiteConnection(readingOnly: path).query("SELECT COUNT(*) FROM records") { $0.int(0) }.first ?? 0)
    }

    /// The same rows inserted with the C API at the pull's durability, `perStatement` rows to a
    /// statement and `perTransaction` to a transaction; `indexed` adds what the outbox's schema
    /// keeps for each Delivery: its two keys (status, stop_order) as columns of the row, and
    /// their two indexes, built once at the end as an initial pull builds them.
    static func rawInserts(
        path: String, count: Int, payload: Data, indexed: Bool = false, perStatement: Int = 1, perTransaction: Int = 1000
    ) throws -> Double {
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw BenchmarkFailure(message: "cannot open \(path)") }
        defer { sqlite3_close(db) }
        sqlite3_exec(
            db,
            """
            PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
            CREATE TABLE records (workspace TEXT NOT NULL, type TEXT NOT NULL, id INTEGER NOT NULL, version INTEGER NOT NULL,
                                  payload BLOB NOT NULL, key1 TEXT, key2 TEXT, PRIMARY KEY (workspace, type, id)) WITHOUT ROWID
            """, nil, nil, nil)
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        func prepare(_ rows: Int) -> OpaquePointer? {
            var statement: OpaquePointer?
            let values = Array(repeating: "('big', 'Delivery', ?, 1, ?, ?, ?)", count: rows).joined(separator: ", ")
            sqlite3_prepare_v2(
                db, "INSERT INTO records (workspace, type, id, version, payload, key1, key2) VALUES \(values)", -1, &statement, nil)
            return statement
        }
        let full = prepare(perStatement)
        let single = prepare(1)
        defer {
            sqlite3_finalize(full)
            sqlite3_finalize(single)
        }
        let start = DispatchTime.now().uptimeNanoseconds
        var n = 0
        while n < count {
            if n % perTransaction == 0 { sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil) }
            let rows = min(perStatement, perTransaction - n % perTransaction, count - n)
            let statement = rows == perStatement ? full : single
            let taken = rows == perStatement ? rows : 1
            sqlite3_reset(statement)
            for row in 0..<taken {
                let base = Int32(row * 4)
                sqlite3_bind_int64(statement, base + 1, Int64(n + row + 1))
                _ = payload.withUnsafeBytes { sqlite3_bind_blob(statement, base + 2, $0.baseAddress, Int32($0.count), transient) }
                if indexed {
                    sqlite3_bind_text(statement, base + 3, "assigned", -1, transient)
                    sqlite3_bind_text(statement, base + 4, String(n + row + 1), -1, transient)
                } else {
                    sqlite3_bind_null(statement, base + 3)
                    sqlite3_bind_null(statement, base + 4)
                }
            }
            guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchmarkFailure(message: "raw insert failed") }
            n += taken
            if n % perTransaction == 0 || n == count { sqlite3_exec(db, "COMMIT", nil, nil, nil) }
        }
        if indexed {
            sqlite3_exec(
                db,
                """
                CREATE INDEX records_key1 ON records(workspace, type, key1) WHERE key1 IS NOT NULL;
                CREATE INDEX records_key2 ON records(workspace, type, key2) WHERE key2 IS NOT NULL
                """, nil, nil, nil)
        }
        return OutboxBenchmark.seconds(since: start)
    }

    static func median(_ values: [Double]) -> Double { BenchCommand.median(values) }

    /// The lowest and highest of the rounds' rate ratios, each pull against the raw inserts of its own round.
    static func perRound(raw: [Double], pull: [Double]) -> String {
        let ratios = zip(raw, pull).map { $0 / $1 }
        return String(format: "%.2f×–%.2f×", ratios.min() ?? 0, ratios.max() ?? 0)
    }

    /// `median 1.23 s (min 1.20, max 1.31)`, in ms below a second.
    static func spread(_ values: [Double]) -> String {
        let sorted = values.sorted()
        let unit = sorted.last ?? 0 >= 1 ? (1.0, "s") : (1000.0, "ms")
        func f(_ v: Double) -> String { String(format: "%.2f", v * unit.0) }
        return "median \(f(median(values))) \(unit.1) (min \(f(sorted.first ?? 0)), max \(f(sorted.last ?? 0)))"
    }

    static func rate(_ count: Int, _ seconds: Double) -> String { String(format: "%.0f", Double(count) / seconds) }
}
