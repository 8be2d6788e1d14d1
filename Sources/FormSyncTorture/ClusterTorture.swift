import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncPostgres
import FormSyncServer
import FormSyncTesting
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `formsync-lab torture cluster`: the crash torture's device against a cluster. N server nodes
/// (`formsync serve --database`, real processes) share one PostgreSQL database in a throwaway
/// cluster; the device sends each request to a node picked at random; nodes are SIGKILLed and
/// restarted at seeded moments while the device captures, flushes, uploads and pulls (and is
/// itself killed now and then), and PostgreSQL is killed and restarted once mid-run. The back
/// office writes through a node of its own. Afterwards the crash torture's invariants must hold
/// (every capture stored once, files intact, lanes in capture order, edits landed, the device's
/// records equal to its scope, nothing stranded), and the feed must have numbered every change.
package struct ClusterTorture {
    package struct Options: Sendable {
        package var nodes = 3
        package var nodeKills = 500
        package var seed: UInt64 = 1
        /// The lab executable that runs the device (`formsync-lab torture device`).
        package var executable: String
        /// The `formsync` executable that runs each server node (`formsync serve`).
        package var server: String
        package var folder: URL
        package var progress: @Sendable (String) -> Void = { _ in }

        package init(
            nodes: Int, nodeKills: Int, seed: UInt64, executable: String, server: String, folder: URL,
            progress: @escaping @Sendable (String) -> Void = { _ in }
        ) {
            self.nodes = nodes
            self.nodeKills = nodeKills
            self.seed = seed
            self.executable = executable
            self.server = server
            self.folder = folder
            self.progress = progress
        }
    }

    /// What a run did and found.
    package struct Result: Sendable, CustomStringConvertible {
        package var nodes = 0
        package var nodeKills = 0
        package var databaseRestarts = 0
        package var changes = 0
        package var device = CrashTorture.Result()

        package var failures: [String] { device.failures }

        package var description: String {
            var lines = [
                "cluster: \(nodes) nodes on one PostgreSQL database; \(nodeKills) node kills, \(databaseRestarts) PostgreSQL restart(s); \(device.runs) device runs, \(device.kills) device kills, in \(String(format: "%.1f", device.seconds)) s",
                "captured: \(device.captures) (logged as saved by the device)",
            ]
            guard failures.isEmpty else {
                return (lines + ["FAILED: \(failures.count) invariant(s) broken"] + failures.prefix(30).map { "  - " + $0 }).joined(
                    separator: "\n")
            }
            lines += [
                "server: \(device.documents) logged documents, each exactly once; \(device.files) files intact and remapped; \(device.lanes) lanes in capture order; \(device.edits) edited deliveries carry the latest edit",
                "field work: \(device.inspections) inspections made their findings as records, each once; \(device.removals) findings removed, each once",
                "feed: \(changes) changes, every one numbered; device: \(device.records) records equal the server's scope; nothing stranded; no orphan stash file",
                "shared phone: \(device.partnerCaptures) captures by the partner, each sent under the partner's credential; partner revoked after \(device.partnerRevokedAfter) captures, \(device.sealed) of theirs sealed on the phone, none lost",
            ]
            return lines.joined(separator: "\n")
        }
    }

    let options: Options

    package init(_ options: Options) {
        self.options = options
    }

    package func run() async throws -> Result {
        let started = Date()
        let folder = options.folder
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let cluster = try PostgresCluster()
        defer { cluster.destroy() }
        let url = try cluster.makeDatabase()
        // The back office: a node of its own, in this process (it never listens).
        let backOffice = try SyncServer(
            store: try PostgresServerStore(url: url, migrate: true, now: Int64(Date().timeIntervalSince1970 * 1000)),
            registry: FormRegistry(FormCatalog.forms),
            records: RecordRegistry(FormCatalog.records), workspace: TortureDevice.workspace)
        let known = try CrashTorture.morning(backOffice)
        let refreshToken = try backOffice.issueRefreshToken(principal: TortureDevice.courier, workspaces: [TortureDevice.workspace])
        // A shared phone: the partner's credential is revoked, through the back office's node,
        // two thirds in; every node refuses it from then on.
        let partnerToken = try backOffice.issueRefreshToken(principal: TortureDevice.partner, workspaces: [TortureDevice.workspace])
        var partnerRevoked = false
        let nodes = (0..<options.nodes).map {
            ServerNode(executable: options.server, database: url, log: folder.appendingPathComponent("node-\($0).log").path)
        }
        for node in nodes { try node.start() }
        defer { for node in nodes { node.stop() } }
        let servers = nodes.map(\.url)

        var result = Result()
        result.nodes = options.nodes
        var random = SplitMix64(state: options.seed)
        let database = folder.appendingPathComponent("device.sqlite").path
        let log = folder.appendingPathComponent("device.log").path
        let output = folder.appendingPathComponent("device.out")
        var captures = 24
        let moments = CrashPoint.allCases
        var restartedDatabase = false
        while result.nodeKills < options.nodeKills {
            // One device run, killed at a crash point or after a seeded delay (or left to
            // finish), while nodes die and come back under it.
            let roll = random.next() % 100
            let crash: (CrashPoint, Int)? =
                roll < 40 ? (moments[Int(random.next() % UInt64(moments.count))], 1 + Int(random.next() % 3)) : nil
            let lifetime = roll < 70 ? 0.3 + Double(random.next() % 900) / 1000 : 4.0
            if !partnerRevoked && result.nodeKills >= options.nodeKills * 2 / 3 {
                result.device.partnerRevokedAfter = TortureLog.read(log).count
                try retrying {
                    _ = try backOffice.revokeDevices(
                        principal: TortureDevice.partner, workspace: TortureDevice.workspace, reason: "phone reported lost")
                }
                partnerRevoked = true
            }
            let device = try CrashTorture.launchDevice(
                executable: options.executable, seed: options.seed, database: database, servers: servers, refreshToken: refreshToken,
                partnerToken: partnerToken, log: log, captures: captures, known: known, crash: crash, output: output)
            result.device.runs += 1
            let limit = Date().addingTimeInterval(lifetime)
            var nextKill = Date().addingTimeInterval(Double(20 + random.next() % 200) / 1000)
            while device.isRunning {
                if Date() >= limit {
                    device.signal(SIGKILL)
                    break
                }
                if Date() >= nextKill && result.nodeKills < options.nodeKills {
                    let node = nodes[Int(random.next() % UInt64(nodes.count))]
                    node.kill()
                    result.nodeKills += 1
                    // Back at once, or after a pause in which the device meets a refused connection.
                    if random.next() % 3 == 0 { try await Task.sleep(for: .milliseconds(Int(random.next() % 150))) }
                    let restarting = Date()
                    try node.start()
                    if Date().timeIntervalSince(restarting) > 2 {
                        options.progress(String(format: "a node took %.1f s to come back", Date().timeIntervalSince(restarting)))
                    }
                    nextKill = Date().addingTimeInterval(Double(20 + random.next() % 200) / 1000)
                }
                if !restartedDatabase && result.nodeKills >= options.nodeKills / 2 {
                    // PostgreSQL itself dies once, under everything, and comes back on its data.
                    let down = Date()
                    cluster.crash()
                    try await Task.sleep(for: .milliseconds(300))
                    try cluster.start()
                    options.progress(String(format: "PostgreSQL killed and back in %.1f s", Date().timeIntervalSince(down)))
                    restartedDatabase = true
                    result.databaseRestarts += 1
                }
                try await Task.sleep(for: .milliseconds(2))
            }
            switch device.waitUntilExit() {
            case .signal(SIGKILL):
                result.device.kills += 1
            case .exit(0):
                captures += 24
            case let ended:
                throw TortureError("the device failed on its own (\(ended)):\n\(DeviceOutput.excerpt(of: output))")
            }
            let restarting = Date()
            for node in nodes where !node.isRunning { try node.start() }
            if Date().timeIntervalSince(restarting) > 2 {
                options.progress(String(format: "nodes took %.1f s to come back", Date().timeIntervalSince(restarting)))
            }
            if result.device.runs % 3 == 0 { try retrying { try CrashTorture.backOffice(backOffice, &random) } }
            if result.device.runs % 25 == 0 {
                options.progress(
                    "\(result.nodeKills) node kills, \(result.device.runs) device runs, \(TortureLog.read(log).count) captures logged")
            }
        }

        // The last run: every node up, nothing killed; the device drains and catches up.
        let lastStarted = Date()
        defer { options.progress(String(format: "the last device run took %.1f s", Date().timeIntervalSince(lastStarted))) }
        try await CrashTorture.drain(
            CrashTorture.launchDevice(
                executable: options.executable, seed: options.seed, database: database, servers: servers, refreshToken: refreshToken,
                partnerToken: partnerToken, log: log, captures: captures, known: known, crash: nil, output: output),
            output: output)
        try await CrashTorture.check(
            seed: options.seed, server: backOffice, database: database, log: log, partnerRevoked: partnerRevoked, into: &result.device)
        // The feed: every change committed has its number (none left unsequenced), each once.
        let connection = try PostgresConnection(url: url)
        let counts = try connection.query("SELECT COUNT(*), COUNT(seq), COUNT(DISTINCT seq) FROM changes")
        result.changes = Int(counts.int(0, 0) ?? 0)
        if counts.int(0, 1) != counts.int(0, 0) {
            result.device.failures.append("\((counts.int(0, 0) ?? 0) - (counts.int(0, 1) ?? 0)) committed change(s) have no feed number")
        }
        if counts.int(0, 2) != counts.int(0, 1) { result.device.failures.append("a feed number was given twice") }
        result.device.seconds = Date().timeIntervalSince(started)
        return result
    }

    /// The back office's writes, retried while PostgreSQL comes back from its restart.
    private func retrying(_ body: () throws -> Void) throws {
        var attempt = 0
        while true {
            do {
                return try body()
            } catch {
                attempt += 1
                if attempt >= 50 { throw error }
                usleep(100_000)
            }
        }
    }
}
