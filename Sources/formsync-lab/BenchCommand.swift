import FormSpec
import FormSyncCodegen
import FormSyncCommandLine
import Foundation

/// `formsync-lab bench ...`: measured figures for BENCHMARKS.md, each against a baseline measured
/// in the same run. Nothing here asserts a timing; it prints what it measured.
enum BenchCommand {
    static let help = """
        usage: formsync-lab bench generator [--specs N] [--rounds R] [--from DIR]
               formsync-lab bench enqueue [--items N] [--rounds R] [--parts sequential,concurrent,naive,prepare]
               formsync-lab bench cold-open [--items N] [--rounds R]
               formsync-lab bench outbox [--items N] [--lanes L] [--small S] [--concurrency C[,C…]] [--rounds R] [--lines K]
               formsync-lab bench http [--items N] [--concurrency C] [--rounds R]
               formsync-lab bench server [--items N] [--concurrency C] [--rounds R] [--workers W] [--identities live|random]
               formsync-lab bench server --database postgres://… | --nodes 1,2,4 [--items N] [--concurrency C] [--rounds R] [--pull N]
               formsync-lab bench load [--items N] [--slow S] [--rounds R] [--concurrency C]
               formsync-lab bench pull [--records N] [--rounds R] [--delta D] [--small S]
               formsync-lab bench upload [--megabytes M] [--rounds R] [--chunk C]
               formsync-lab bench files [--rate BYTES_PER_SECOND] [--photo-megabytes M] [--shared-megabytes S] [--rounds R]
               formsync-lab bench live [--changes N] [--rounds R] [--database postgres://…]

          generator   check + generate N specs (variants of the specs in DIR, default FormSpecs),
                      against a baseline that only reads the same YAML.
          enqueue     N sequential enqueues (default 1000) of a one-line and a 10-line 2 KB order
                      against raw single-row FULL commits of the same bytes, R rounds (default 5)
                      interleaved; then 4 concurrent enqueuers; then a naive queue (one JSON
                      array in one file, rewritten per change) at 100, 1k and 10k queued items.
                      --parts runs only the named ones (for a profile of one part).
          cold-open   an app started with N queued 2 KB orders (default 100000): a fresh process
                      opens the outbox and flushes until the first request leaves (ms, peak RSS),
                      against a fresh process that opens the file with the C API and reads the
                      first due row, R rounds (default 5) interleaved.
          outbox      enqueue N sales orders over L lanes and flush them with the in-process
                      transport (default 100000 over 10000), against a raw SQLite insert at the
                      same durability; the per-item flush cost is compared with a run of S items
                      (default 1000); C lanes on the wire at once: the default 4 (what an app
                      gets) and 64 (the best here), each printed, interleaved in every round.
              Both queues are enqueued once; each of R rounds (default 3) flushes fresh
              copies of them, in alternating order. K lines per order (default 1; 10 is
              the 2 KB order).
          http        flush N submissions (default 2000) over loopback HTTP to the embedded
                      server, against the same POSTs sent straight with URLSession at the same
                      concurrency (default 4), R rounds (default 5) interleaved, a fresh server each;
                      a third leg sends them through HTTPTransport alone (where the gap is).
          server      N submissions (default 4000) to the embedded server from C keep-alive
                      socket clients (default 16): durable writes/s with the group commit against
                      the same server committing each write FULL alone, R rounds (default 5)
                      interleaved, a fresh server each with W handler threads (default 4, the
                      server's own). Requests carry live (time-ordered) identities, as devices
                      send them since 0.7.6, or random version 4 UUIDs, as earlier ones sent.
                      With --database or --nodes: the PostgreSQL store with each count of nodes
                      (default 1,2,4; each its own server, HTTP server and connection pool, in
                      this process) on one fresh database per round, against the SQLite store,
                      R rounds (default 3) interleaved; then the pull of N records (default
                      20000) from the change feed on each store. Without --database it starts a
                      throwaway PostgreSQL cluster of its own (PostgreSQL must be installed);
                      with it, it creates and drops its databases on that server.
          load        N submissions (default 1000) to the embedded server at concurrency C
                      (default 4) while S slow connections (default 1000) dribble partial heads,
                      against the same with no slow connections, R rounds (default 3) alternating.
          pull        a device process's initial pull of N records (default 100000) over loopback
                      HTTP, against raw SQLite inserts of the same rows, R rounds (default 3)
                      interleaved, with its peak RSS; then a delta of D changes (default 100) on
                      the N-record store against the same on an S-record store (default 1000).
          upload      one M MB file (default 50) as a resumable upload in C MiB chunks (default 4)
                      against a single POST /files of the same file, R rounds (default 3) interleaved.
          files       a delivery with an M MB photo (default 3) on a link read at BYTES_PER_SECOND
                      (default 20000): capture → delivered on the server and → photo on the server,
                      deferred against files first (a server without deferred files), R rounds
                      (default 3) interleaved; then the bytes sent for two deliveries sharing an
                      S MB photo (default 5), with the look-up by digest and without.
          live        a change committed on node A of two PostgreSQL nodes (in this process, one
                      fresh database per round) reaching a device long-polling node B: from the
                      write to the device's pull having stored it, p50 and p99 of N changes
                      (default 100) per round, R rounds (default 3), against the same change
                      committed on node B itself, the two legs alternating change by change.
        Build with -c release for figures worth recording.
        """

    static func run(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(
            raw,
            options: [
                "--specs", "--rounds", "--from", "--items", "--lanes", "--small", "--concurrency", "--slow", "--records", "--delta",
                "--megabytes", "--chunk", "--lines", "--parts", "--workers", "--identities", "--database", "--nodes", "--pull", "--rate",
                "--photo-megabytes", "--shared-megabytes", "--changes",
            ], flags: ["--help", "-h"])
        if args.flags.contains("--help") || args.flags.contains("-h") {
            print(help)
            return 0
        }
        switch args.positionals.first {
        case "generator":
            return try generator(
                specs: args.integer("--specs", default: 200, in: 1...100_000), rounds: args.integer("--rounds", default: 5, in: 1...1000),
                from: args.values["--from"] ?? "FormSpecs")
        case "enqueue":
            return try await EnqueueBenchmark.run(
                items: args.integer("--items", default: 1000, in: 1...1_000_000), rounds: args.integer("--rounds", default: 5, in: 3...100),
                parts: EnqueueBenchmark.parts(args.values["--parts"]))
        case "cold-open":
            return try await ColdOpenBenchmark.run(
                items: args.integer("--items", default: 100_000, in: 1...10_000_000),
                rounds: args.integer("--rounds", default: 5, in: 3...100))
        case "cold-open-child":
            guard args.positionals.count == 3, ["outbox", "raw"].contains(args.positionals[1]) else {
                throw UsageError("cold-open-child outbox|raw PATH")
            }
            return try await ColdOpenBenchmark.childRun(args.positionals[1], args.positionals[2])
        case "outbox":
            return try await OutboxBenchmark.run(
                items: args.integer("--items", default: 100_000, in: 1...10_000_000),
                lanes: args.integer("--lanes", default: 10_000, in: 1...10_000_000),
                small: args.integer("--small", default: 1000, in: 1...10_000_000),
                concurrencies: try concurrencyList(args.values["--concurrency"] ?? "4,64"),
                rounds: args.integer("--rounds", default: 3, in: 3...100), lines: args.integer("--lines", default: 1, in: 1...200))
        case "http":
            return try await HTTPBenchmark.run(
                items: args.integer("--items", default: 2000, in: 1...1_000_000),
                concurrency: args.integer("--concurrency", default: 4, in: 1...256),
                rounds: args.integer("--rounds", default: 5, in: 3...100))
        case "server" where args.values["--database"] != nil || args.values["--nodes"] != nil:
            let nodes = try (args.values["--nodes"] ?? "1,2,4").split(separator: ",").map { text -> Int in
                guard let count = Int(text), (1...16).contains(count) else {
                    throw UsageError("--nodes lists node counts from 1 to 16, as 1,2,4")
                }
                return count
            }
            guard !nodes.isEmpty else { throw UsageError("--nodes lists node counts, as 1,2,4") }
            if let url = args.values["--database"], !(url.hasPrefix("postgres://") || url.hasPrefix("postgresql://")) {
                throw UsageError("--database takes a postgres:// URL of a server the benchmark may create databases on")
            }
            return try ClusterBenchmark.run(
                items: args.integer("--items", default: 4000, in: 1...1_000_000),
                concurrency: args.integer("--concurrency", default: 16, in: 1...256),
                rounds: args.integer("--rounds", default: 3, in: 3...100), workers: args.integer("--workers", default: 4, in: 1...256),
                database: args.values["--database"], nodes: nodes, pullRecords: args.integer("--pull", default: 20_000, in: 0...1_000_000))
        case "server":
            return try ServerBenchmark.run(
                items: args.integer("--items", default: 4000, in: 1...1_000_000),
                concurrency: args.integer("--concurrency", default: 16, in: 1...256),
                rounds: args.integer("--rounds", default: 5, in: 3...100), workers: args.integer("--workers", default: 4, in: 1...256),
                identities: try ServerBenchmark.identities(args.values["--identities"]))
        case "load":
            return try await LoadBenchmark.run(
                items: args.integer("--items", default: 1000, in: 1...1_000_000),
                slow: args.integer("--slow", default: 1000, in: 0...10_000),
                rounds: args.integer("--rounds", default: 3, in: 1...100),
                concurrency: args.integer("--concurrency", default: 4, in: 1...256))
        case "pull":
            return try await PullBenchmark.run(
                records: args.integer("--records", default: 100_000, in: 1...10_000_000),
                rounds: args.integer("--rounds", default: 3, in: 1...100),
                delta: args.integer("--delta", default: 100, in: 1...100_000),
                small: args.integer("--small", default: 1000, in: 1...10_000_000))
        case "upload":
            return try await UploadBenchmark.run(
                megabytes: args.integer("--megabytes", default: 50, in: 1...2000),
                rounds: args.integer("--rounds", default: 3, in: 1...100),
                chunkMegabytes: args.integer("--chunk", default: 4, in: 1...64))
        case "files":
            return try await DeferredFilesBenchmark.run(
                bytesPerSecond: args.integer("--rate", default: 20_000, in: 1_000...1_000_000_000),
                photoBytes: args.integer("--photo-megabytes", default: 3, in: 1...200) * 1_000_000,
                sharedBytes: args.integer("--shared-megabytes", default: 5, in: 1...200) * 1_000_000,
                rounds: args.integer("--rounds", default: 3, in: 1...100))
        case "live":
            if let url = args.values["--database"], !(url.hasPrefix("postgres://") || url.hasPrefix("postgresql://")) {
                throw UsageError("--database takes a postgres:// URL of a server the benchmark may create databases on")
            }
            return try await LiveChangesBenchmark.run(
                changes: args.integer("--changes", default: 100, in: 1...100_000),
                rounds: args.integer("--rounds", default: 3, in: 3...100), database: args.values["--database"])
        default:
            throw UsageError("name a benchmark: generator, enqueue, outbox, http, server, load, pull, upload, files or live")
        }
    }

    static func generator(specs count: Int, rounds: Int, from folder: String) throws -> Int32 {
        var records: [(path: String, text: String)] = []
        let sources = SpecLoader.specFiles(in: [folder]).compactMap { path -> (String, String)? in
            guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else { return nil }
            let checked = SpecLoader.check(text: text, path: path)
            if let record = checked.record { records.append(("\(record.name).yaml", text)) }
            return checked.form.map { ($0.name, text) }
        }
        guard !sources.isEmpty, count > 0, rounds > 0 else { throw UsageError("no valid specs in \(folder)") }
        // N distinct specs: the records once, then copies of the forms, each under its own name.
        let texts =
            Array(records.prefix(count))
            + (0..<max(0, count - records.count)).map { i -> (path: String, text: String) in
                let (name, text) = sources[i % sources.count]
                return ("Bench\(i).yaml", text.replacingOccurrences(of: "form: \(name)", with: "form: \(name)\(i)"))
            }
        var baseline: [Double] = []
        var full: [Double] = []
        var bytes = 0
        for _ in 0..<rounds {
            baseline.append(
                measure {
                    for (path, text) in texts { _ = SpecLoader.parseOnly(text: text, path: path) }
                })
            full.append(
                measure {
                    bytes = 0
                    for (path, text) in texts {
                        let checked = SpecLoader.check(text: text, path: path)
                        guard checked.form != nil || checked.record != nil else { fatalError("bench spec \(path) has errors") }
                        for file in GeneratedFile.outputs(for: checked) { bytes += file.contents.utf8.count }
                    }
                })
        }
        let base = median(baseline)
        let total = median(full)
        print("generator benchmark: \(count) specs, median of \(rounds) rounds, \(bytes) bytes generated per round")
        print("  yaml read only (baseline)        : \(format(base * 1000)) ms  \(format(Double(count) / base)) specs/s")
        print("  check + generate Swift and schema:  \(format(total * 1000)) ms  \(format(Double(count) / total)) specs/s")
        print("  ratio full / baseline: \(format(total / base))x")
        try buildPath(texts: texts, rounds: rounds)
        return 0
    }

    /// The build path as the plugin runs it, processes included: one `formsync-gen` for the
    /// whole target against one per spec (how the plugin ran before), interleaved, clean
    /// output folders each round.
    static func buildPath(texts: [(path: String, text: String)], rounds: Int) throws {
        guard let executable = Bundle.main.executablePath else { return }
        let generator = ((executable as NSString).deletingLastPathComponent as NSString).appendingPathComponent("formsync-gen")
        guard FileManager.default.isExecutableFile(atPath: generator) else {
            print("  build path: skipped, no formsync-gen beside formsync (swift build -c release --product formsync-gen)")
            return
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("formsync-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var specs: [String] = []
        for (name, text) in texts {
            let path = folder.appendingPathComponent(name).path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            specs.append(path)
        }
        // The plugin runs the formsync-gen of the build it is part of: a plain `swift build` runs
        // the debug one, which is timed too when it is there (beside this build's folder).
        let buildFolder = (generator as NSString).deletingLastPathComponent
        let debugGenerator = (((buildFolder as NSString).deletingLastPathComponent as NSString).appendingPathComponent("debug") as NSString)
            .appendingPathComponent("formsync-gen")
        let debugTool = debugGenerator != generator && FileManager.default.isExecutableFile(atPath: debugGenerator) ? debugGenerator : nil
        func run(_ arguments: [String], tool: String = generator) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = arguments
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw UsageError("formsync-gen failed on the benchmark's specs") }
        }
        var perSpec: [Double] = []
        var perTarget: [Double] = []
        var perTargetDebug: [Double] = []
        let modes = ["spec", "target"] + (debugTool == nil ? [] : ["debug"])
        for round in 0..<rounds {
            for mode in round % 2 == 0 ? modes : modes.reversed() {
                let out = folder.appendingPathComponent("out-\(mode)-\(round)")
                try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
                let start = DispatchTime.now().uptimeNanoseconds
                if mode == "spec" {
                    try run(["--catalog", out.appendingPathComponent("FormCatalog.swift").path] + specs)
                    for spec in specs {
                        try run([spec, "--swift", out.appendingPathComponent((spec as NSString).lastPathComponent + ".swift").path])
                    }
                    perSpec.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
                } else if mode == "debug", let debugTool {
                    try run(["--target", out.path] + specs, tool: debugTool)
                    perTargetDebug.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
                } else {
                    try run(["--target", out.path] + specs)
                    perTarget.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
                }
            }
        }
        let count = Double(specs.count)
        print("  build path, clean, processes included (median of \(rounds) interleaved rounds):")
        print(
            "    one formsync-gen per spec + catalog (before): \(format(median(perSpec) * 1000)) ms  \(format(count / median(perSpec))) specs/s"
        )
        print(
            "    one formsync-gen per target (the plugin now):  \(format(median(perTarget) * 1000)) ms  \(format(count / median(perTarget))) specs/s"
        )
        print("    speed-up: \(format(median(perSpec) / median(perTarget)))x")
        if debugTool != nil {
            print(
                "    one formsync-gen per target, the debug build (what a plain `swift build` runs): \(format(median(perTargetDebug) * 1000)) ms  \(format(count / median(perTargetDebug))) specs/s"
            )
        } else if debugGenerator == generator {
            print("    (this is the debug build: the line above is what a plain `swift build` runs)")
        } else {
            print(
                "    the debug formsync-gen (what a plain `swift build` runs) was not found beside this build: swift build --product formsync-gen"
            )
        }
    }

    static func measure(_ body: () -> Void) -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// The middle value (the mean of the two middle ones for an even count; 0 for none).
    /// `--concurrency 4,64`: one to four values from 1 to 256, each once.
    static func concurrencyList(_ text: String) throws -> [Int] {
        let values = text.split(separator: ",", omittingEmptySubsequences: false).map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard (1...4).contains(values.count), values.allSatisfy({ $0.map { (1...256).contains($0) } ?? false }),
            Set(values).count == values.count
        else {
            throw UsageError("--concurrency takes one to four different values from 1 to 256, such as 4,64, not '\(text.prefix(40))'")
        }
        return values.compactMap { $0 }
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    static func format(_ value: Double) -> String {
        String(format: value >= 100 ? "%.0f" : "%.2f", value)
    }
}
