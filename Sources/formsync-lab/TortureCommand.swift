import FormSyncClient
import FormSyncCommandLine
import FormSyncTorture
import Foundation

/// `formsync-lab torture crash|sim`: the proof harnesses. `crash` kills a real device process at
/// seeded moments and checks the server and the device afterwards; `sim` runs seeded fault
/// schedules against an in-process model of the server and the network on a virtual clock.
enum TortureCommand {
    static let help = """
        usage: formsync-lab torture crash [--kills N] [--seed S] [--keep DIR]
               formsync-lab torture sim [--seeds N] [--first S] [--steps K] [--trace]
               formsync-lab torture enqueue [--kills N] [--seed S] [--tasks T] [--count C] [--keep DIR]
               formsync-lab torture cluster [--nodes N] [--node-kills K] [--seed S] [--keep DIR]

        crash: a device process captures customers with photos (filled as drafts; some photos
          large enough for resumable uploads), orders and edits of pulled deliveries, and
          flushes and pulls against the reference server on loopback. It is SIGKILLed N times
          (default 2000): at a named moment (stash-copied: between the stash copy and the
          enqueue's commit; leased: between the lease and the send; delivered: after the
          server committed, before the device recorded it; pull-page: mid-pull; upload-chunk:
          mid-upload; draft-saved: after a draft's save; draft-attached: between a draft
          photo's copy and its row; draft-submitted: between a draft's item and its discard)
          or after a seeded delay, and restarted, while the back office changes, deletes and reassigns records
          and the server drops replies. A last run drains; then every capture the device
          logged as saved must be on the server exactly once, files intact and remapped, lanes
          in capture order, edits landed, the device's records equal to the server's scope,
          nothing stranded, no draft left and no orphan stash file. Exit status 1 names what broke.
        sim: N seeds (default 10000) from --first (default 1), each a schedule of K steps
          (default 80) run against the reference server's handler in-process through a
          seeded network (dropped requests, replies lost after commit, reordered completions,
          503/429 with sane and absurd Retry-After, captive-portal 200s, redirects, 409s,
          422s), on a virtual clock: captures with photos, edits of pulled records, flushes,
          pulls, long outages, device clock jumps both ways, workspace switches, back-office
          changes, expired tokens (401), an app update to SalesOrder version 2, and restarts.
          Then the network calms and everything drains, and each schedule is checked: nothing
          lost, nothing applied twice, lane order kept, every parked item listed with its
          reason, nothing exhausted, the device's records equal to the server's. A failing
          seed is shrunk to its smallest failing schedule and printed with its trace; --trace
          prints the trace of every seed.
        enqueue: a process enqueues from T tasks at once (default 4; each C documents, default
          250, every fifth a new customer with a photo), so that enqueues share transactions,
          and is SIGKILLed N times (default 200) after seeded delays and restarted; each run
          enqueues every document again. A last run finishes. Then the outbox must hold every
          document exactly once, each one the process logged as saved under the id it was
          given, one file item per photo, and in the stash exactly their copies.
        cluster: the crash torture's device against N server nodes (default 3; `formsync serve
          --database`, real processes) on one PostgreSQL database in a throwaway cluster it
          starts itself (PostgreSQL must be installed). Each request goes to a node picked at
          random. Nodes are SIGKILLed and restarted K times (default 500) at seeded moments
          while the device captures, uploads and pulls (and is itself killed now and then);
          PostgreSQL is killed and restarted once, halfway. Then the crash torture's invariants
          must hold, and every committed change must have its own feed number.
        The same seed plans the same kills and captures.
        """

    static func run(_ raw: [String]) async throws -> Int32 {
        guard let sub = raw.first else { throw UsageError("torture needs crash, sim, enqueue or cluster") }
        let rest = Array(raw.dropFirst())
        switch sub {
        case "--help", "-h":
            print(help)
            return 0
        case "crash": return try await crash(rest)
        case "sim": return try await sim(rest)
        case "device": return try await device(rest)
        case "draft-device": return try await draftDevice(rest)
        case "disk-full": return try await diskFull(rest)
        case "enqueue": return try await enqueue(rest)
        case "enqueuer": return try await enqueuer(rest)
        case "cluster": return try await cluster(rest)
        default: throw UsageError("unknown torture '\(sub)': crash, sim, enqueue or cluster")
        }
    }

    static func cluster(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(raw, options: ["--nodes", "--node-kills", "--seed", "--keep"], flags: ["--help"])
        if args.flags.contains("--help") {
            print(help)
            return 0
        }
        let nodes = try args.integer("--nodes", default: 3, in: 1...16)
        let kills = try args.integer("--node-kills", default: 500, in: 0...1_000_000)
        let seed = UInt64(try args.integer("--seed", default: 1, in: 0...Int.max))
        let (folder, removeFolder) = workFolder(args, name: "formsync-cluster")
        defer { removeFolder() }
        let executable = try LabExecutables.own(toRun: "the nodes and the device")
        printError("torture cluster: \(nodes) nodes, \(kills) node kills, seed \(seed), in \(folder.path)")
        let torture = ClusterTorture(
            .init(
                nodes: nodes, nodeKills: kills, seed: seed, executable: executable, server: try LabExecutables.formsync(), folder: folder,
                progress: { printError("  \($0)") }))
        let result = try await torture.run()
        print(result.description)
        return result.failures.isEmpty ? 0 : 1
    }

    static func crash(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(raw, options: ["--kills", "--seed", "--keep"], flags: ["--help"])
        if args.flags.contains("--help") {
            print(help)
            return 0
        }
        let kills = try args.integer("--kills", default: 2000, in: 1...1_000_000)
        let seed = UInt64(try args.integer("--seed", default: 1, in: 0...Int.max))
        let (folder, removeFolder) = workFolder(args, name: "formsync-torture")
        defer { removeFolder() }
        let executable = try LabExecutables.own(toRun: "the device")
        printError("torture crash: \(kills) kills, seed \(seed), in \(folder.path)")
        let torture = CrashTorture(
            .init(kills: kills, seed: seed, executable: executable, folder: folder, progress: { printError("  \($0)") }))
        let result = try await torture.run()
        print(result.description)
        return result.failures.isEmpty ? 0 : 1
    }

    static func enqueue(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(raw, options: ["--kills", "--seed", "--tasks", "--count", "--keep"], flags: ["--help"])
        if args.flags.contains("--help") {
            print(help)
            return 0
        }
        let kills = try args.integer("--kills", default: 200, in: 1...1_000_000)
        let seed = UInt64(try args.integer("--seed", default: 1, in: 0...Int.max))
        let tasks = try args.integer("--tasks", default: 4, in: enqueuerTasks)
        let count = try args.integer("--count", default: 250, in: enqueuerDocuments)
        let (folder, removeFolder) = workFolder(args, name: "formsync-enqueue-torture")
        defer { removeFolder() }
        let executable = try LabExecutables.own(toRun: "the enqueuer")
        printError("torture enqueue: \(kills) kills, seed \(seed), \(tasks) tasks of \(count) documents, in \(folder.path)")
        let result = try await EnqueueTorture(
            .init(kills: kills, seed: seed, tasks: tasks, count: count, executable: executable, folder: folder)
        ).run()
        print(result.description)
        return result.failures.isEmpty ? 0 : 1
    }

    static func enqueuer(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(raw, options: ["--db", "--log", "--tasks", "--count"], flags: [])
        guard let database = args.values["--db"], let log = args.values["--log"] else {
            throw UsageError("torture enqueuer needs --db and --log")
        }
        return try await EnqueueTorture.enqueuer(
            database: database, log: log, tasks: try args.integer("--tasks", default: 4, in: enqueuerTasks),
            count: try args.integer("--count", default: 250, in: enqueuerDocuments))
    }

    /// How many tasks enqueue at once, and how many documents each, in `torture enqueue`.
    static let enqueuerTasks = 1...64
    static let enqueuerDocuments = 1...10_000

    /// The run's folder: `--keep DIR` (emptied first, kept afterwards) or a fresh temporary one,
    /// which the returned closure removes.
    static func workFolder(_ args: Arguments, name: String) -> (URL, () -> Void) {
        let kept = args.values["--keep"].map { URL(fileURLWithPath: $0) }
        let folder = kept ?? FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try? FileManager.default.removeItem(at: folder)
        return (folder, { if kept == nil { try? FileManager.default.removeItem(at: folder) } })
    }

    static func sim(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(raw, options: ["--seeds", "--first", "--steps"], flags: ["--help", "--trace"])
        if args.flags.contains("--help") {
            print(help)
            return 0
        }
        let seeds = try args.integer("--seeds", default: 10_000, in: 1...10_000_000)
        let first = UInt64(try args.integer("--first", default: 1, in: 0...Int.max))
        let steps = try args.integer("--steps", default: 80, in: 1...10_000)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("formsync-sim-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        printError("torture sim: \(seeds) seeds from \(first), \(steps) steps each")
        let summary = await SimulationRunner(first: first, count: seeds, steps: steps, folder: folder, progress: { printError($0) })
            .run(trace: args.flags.contains("--trace"))
        print(summary.description)
        return summary.failed.isEmpty ? 0 : 1
    }

    /// Internal: a device whose disk fills up during a pull (BadEnvironmentTests).
    static func diskFull(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(raw, options: ["--db", "--server", "--refresh-token", "--headroom"])
        guard let db = args.values["--db"], let server = args.values["--server"].flatMap(URL.init(string:)),
            let token = args.values["--refresh-token"]
        else { throw UsageError("torture disk-full needs --db, --server and --refresh-token") }
        let headroom = try args.integer("--headroom", default: 256 << 10, in: 0...(1 << 30))
        return try await DiskFullDevice(database: db, server: server, refreshToken: token, headroom: headroom).run()
    }

    /// Internal: the device process of `torture crash`.
    /// The drafts' crash test's device (not in the help: the test runs it).
    static func draftDevice(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(raw, options: ["--db", "--crash"])
        guard let db = args.values["--db"] else { throw UsageError("torture draft-device needs --db") }
        return try await DraftDevice(database: db, crash: try crashPoint(args.values["--crash"])).run()
    }

    /// `--crash POINT:N`, checked.
    static func crashPoint(_ text: String?) throws -> (CrashPoint, Int)? {
        guard let text else { return nil }
        let parts = text.split(separator: ":")
        guard parts.count == 2, let point = CrashPoint(rawValue: String(parts[0])), let n = Int(parts[1]), (1...1000).contains(n) else {
            throw UsageError("--crash takes POINT:N, POINT one of \(CrashPoint.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return (point, n)
    }

    static func device(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(
            raw,
            options: ["--db", "--server", "--refresh-token", "--partner-token", "--log", "--seed", "--captures", "--customers", "--crash"])
        let servers = (args.values["--server"] ?? "").split(separator: ",").compactMap { URL(string: String($0)) }
        guard let db = args.values["--db"], !servers.isEmpty,
            let token = args.values["--refresh-token"], let log = args.values["--log"]
        else { throw UsageError("torture device needs --db, --server, --refresh-token and --log") }
        let seed = UInt64(try args.integer("--seed", default: 1, in: 0...Int.max))
        let captures = try args.integer("--captures", default: 24, in: 1...10_000_000)
        let customers = (args.values["--customers"] ?? "").split(separator: ",").compactMap { Int64($0) }
        guard !customers.isEmpty else { throw UsageError("--customers lists the back office's customer ids") }
        let crash = try crashPoint(args.values["--crash"])
        let device = TortureDevice(
            database: db, servers: servers, refreshToken: token, log: log, plan: TorturePlan(seed: seed), captures: captures,
            knownCustomers: customers,
            crash: crash, partnerToken: args.values["--partner-token"])
        return try await device.run()
    }
}
