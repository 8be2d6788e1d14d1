import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncSQLite
import FormSyncServer
import FormSyncTesting
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `formsync-lab torture crash`: a device process (`TortureDevice`) captures, flushes and pulls
/// against the reference server on loopback while this harness SIGKILLs it at seeded moments —
/// at a named crash point (between the stash copy and the commit, between the lease and the
/// send, after the server committed but before the device recorded it, mid-pull, mid-upload) or
/// after a seeded delay — and restarts it, with the back office changing records and the
/// server dropping replies meanwhile. At the end one last run drains, and the server's database
/// and the device's store are checked against the device's log of what it was told was saved.
package struct CrashTorture {
    package struct Options: Sendable {
        package var kills = 2000
        package var seed: UInt64 = 1
        /// The `formsync` executable that runs the device (`formsync-lab torture device`).
        package var executable: String
        package var folder: URL
        package var progress: @Sendable (String) -> Void = { _ in }

        package init(kills: Int, seed: UInt64, executable: String, folder: URL, progress: @escaping @Sendable (String) -> Void = { _ in }) {
            self.kills = kills
            self.seed = seed
            self.executable = executable
            self.folder = folder
            self.progress = progress
        }
    }

    /// What a run did and what it found.
    package struct Result: Sendable, CustomStringConvertible {
        package var kills = 0
        package var killsByMoment: [String: Int] = [:]
        package var runs = 0
        package var captures = 0
        package var documents = 0
        package var files = 0
        /// Customers stored before their photo, which completed them later (deferred files).
        package var deferred = 0
        package var lanes = 0
        package var records = 0
        package var edits = 0
        package var inspections = 0
        package var removals = 0
        /// The shared phone: the partner's captures, how many of them were sealed when the back
        /// office revoked the partner, and after how many captures that happened.
        package var partnerCaptures = 0
        package var sealed = 0
        package var partnerRevokedAfter = 0
        package var seconds = 0.0
        package var failures: [String] = []

        package var description: String {
            let moments = killsByMoment.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            let run = [
                "kills: \(kills) over \(runs) device runs in \(String(format: "%.1f", seconds)) s (\(moments))",
                "captured: \(captures) (logged as saved by the device)",
            ]
            guard failures.isEmpty else {
                return (run + ["FAILED: \(failures.count) invariant(s) broken"] + failures.prefix(30).map { "  - " + $0 }).joined(
                    separator: "\n")
            }
            return
                (run + [
                    "server: \(documents) logged documents, each exactly once; \(files) files intact and remapped; \(lanes) lanes in capture order; \(edits) edited deliveries carry the latest edit",
                    "field work: \(inspections) inspections made their findings as records, each once; \(removals) findings removed, each once",
                    "deferred: \(deferred) of \(files) customers reached the server before their photo, which completed them",
                    "device: \(records) records equal the server's scope; nothing stranded; no orphan stash file",
                    "shared phone: \(partnerCaptures) captures by the partner, each sent under the partner's credential; partner revoked after \(partnerRevokedAfter) captures, \(sealed) of theirs sealed on the phone, none lost",
                ]).joined(separator: "\n")
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
        let server = try SyncServer(
            directory: folder.appendingPathComponent("server").path, forms: FormCatalog.forms, records: FormCatalog.records)
        _ = try server.start()
        defer { server.stop() }
        let workspace = TortureDevice.workspace
        var random = SplitMix64(state: options.seed)

        let known = try Self.morning(server)
        let refreshToken = try server.issueRefreshToken(principal: TortureDevice.courier, workspaces: [workspace])
        // The phone is shared with a partner, whose credential the back office revokes two thirds in.
        let partnerToken = try server.issueRefreshToken(principal: TortureDevice.partner, workspaces: [workspace])
        var partnerRevoked = false
        let database = folder.appendingPathComponent("device.sqlite").path
        let log = folder.appendingPathComponent("device.log").path
        let output = folder.appendingPathComponent("device.out")

        var result = Result()
        var captures = 24
        let moments = CrashPoint.allCases
        while result.kills < options.kills {
            // One device run: armed at a crash point, or killed after a seeded delay.
            let roll = random.next() % 100
            let crash: (CrashPoint, Int)? =
                roll < 65 ? (moments[Int(random.next() % UInt64(moments.count))], 1 + Int(random.next() % 3)) : nil
            let delay = 20 + Int(random.next() % 400)
            if random.next() % 5 == 0 { server.faults.add(.dropAfterCommit, count: 1 + Int(random.next() % 2)) }
            if random.next() % 17 == 0 { server.faults.add(.unavailable(retryAfterSeconds: 1), count: 1) }
            if random.next() % 23 == 0 { server.faults.add(.captivePortal, count: 1) }
            // The partner is revoked two thirds in, the moment a capture of theirs is saved and
            // not yet on the server (or, failing that, five sixths in): it must be sealed or
            // delivered, never lost and never sent under the courier's credential.
            func revokeThePartner() throws {
                result.partnerRevokedAfter = TortureLog.read(log).count
                _ = try server.revokeDevices(principal: TortureDevice.partner, workspace: workspace, reason: "phone reported lost")
                partnerRevoked = true
            }
            if !partnerRevoked && result.kills >= options.kills * 5 / 6 { try revokeThePartner() }
            let watchPartner = !partnerRevoked && result.kills >= options.kills * 2 / 3
            let device = try launch(
                database: database, server: server.baseURL, refreshToken: refreshToken, partnerToken: partnerToken, log: log,
                captures: captures, known: known, crash: crash, output: output)
            result.runs += 1
            let limit = Date().addingTimeInterval(crash == nil ? Double(delay) / 1000 : 3)
            var killedByUs = false
            var looks = 0
            while device.isRunning {
                if Date() >= limit {
                    device.signal(SIGKILL)
                    killedByUs = true
                    break
                }
                looks += 1
                if watchPartner, !partnerRevoked, looks % 5 == 0, case .order(let i, _, TortureDevice.partner) = TortureLog.read(log).last,
                    server.document(TorturePlan(seed: options.seed).documentID(i)) == nil
                {
                    try revokeThePartner()
                }
                try await Task.sleep(for: .milliseconds(2))
            }
            let ended = device.waitUntilExit()
            switch ended {
            case .signal(SIGKILL):
                result.kills += 1
                let moment = killedByUs ? (crash == nil ? "timer" : "timer (\(crash!.0.rawValue) not reached)") : crash!.0.rawValue
                result.killsByMoment[moment, default: 0] += 1
            case .exit(0):
                captures += 24  // all captured and drained: give it more to do
            default:
                throw TortureError("the device failed on its own (\(ended)):\n\(DeviceOutput.excerpt(of: output))")
            }
            if result.runs % 4 == 0 { try Self.backOffice(server, &random) }
            if result.runs % 100 == 0 {
                options.progress("\(result.kills) kills, \(result.runs) runs, \(TortureLog.read(log).count) captures logged")
            }
        }
        server.faults.clear()

        // The last run: nothing armed, nothing killed; it must drain and catch up.
        try await Self.drain(
            launch(
                database: database, server: server.baseURL, refreshToken: refreshToken, partnerToken: partnerToken, log: log,
                captures: captures, known: known, crash: nil, output: output),
            output: output)
        try await Self.check(
            seed: options.seed, server: server, database: database, log: log, partnerRevoked: partnerRevoked, into: &result)
        result.seconds = Date().timeIntervalSince(started)
        return result
    }

    private func launch(
        database: String, server: URL, refreshToken: String, partnerToken: String, log: String, captures: Int, known: [Int64],
        crash: (CrashPoint, Int)?, output: URL
    ) throws -> ChildProcess {
        try Self.launchDevice(
            executable: options.executable, seed: options.seed, database: database, servers: [server], refreshToken: refreshToken,
            partnerToken: partnerToken, log: log, captures: captures, known: known, crash: crash, output: output)
    }

    /// Waits for the last device run, which nothing kills, to drain and catch up (3 minutes at
    /// most); throws with the end of its output when it does not.
    static func drain(_ last: ChildProcess, output: URL) async throws {
        let deadline = Date().addingTimeInterval(180)
        while last.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        if last.isRunning { last.signal(SIGKILL) }
        let ended = last.waitUntilExit()
        guard ended == .exit(0) else {
            throw TortureError("the last device run did not drain (\(ended)):\n\(DeviceOutput.excerpt(of: output))")
        }
    }

    /// Starts `formsync-lab torture device` against `servers` (each request to one at random).
    static func launchDevice(
        executable: String, seed: UInt64, database: String, servers: [URL], refreshToken: String, partnerToken: String, log: String,
        captures: Int, known: [Int64], crash: (CrashPoint, Int)?, output: URL
    ) throws -> ChildProcess {
        var arguments = [
            "torture", "device", "--db", database, "--server", servers.map(\.absoluteString).joined(separator: ","), "--refresh-token",
            refreshToken, "--partner-token", partnerToken,
            "--log", log, "--seed", String(seed), "--captures", String(captures), "--customers",
            known.map(String.init).joined(separator: ","),
        ]
        if let crash { arguments += ["--crash", "\(crash.0.rawValue):\(crash.1)"] }
        return try ChildProcess(executable, arguments, standardOutput: .file(output.path), standardError: .file(output.path))
    }

    /// The back office's morning: deliveries for two couriers, customers everyone sees. Returns
    /// the customers' ids.
    static func morning(_ server: SyncServer) throws -> [Int64] {
        let workspace = TortureDevice.workspace
        var known: [Int64] = []
        for n in 0..<8 {
            known.append(try server.putRecord(Customer(name: "Known shop \(n)", segment: .wholesale), workspace: workspace).id)
        }
        for n in 0..<24 {
            let courier = n % 3 == 2 ? "bob" : TortureDevice.courier
            _ = try server.putRecord(
                Delivery(courierId: courier, status: .assigned, stopOrder: n % 2 == 0 ? n + 1 : 1000 + n, address: "Rua \(n)"),
                workspace: workspace)
        }
        // After the round, so that a device's first pages bring its deliveries (edits need them).
        for n in 0..<TorturePlan.seededFindings {
            _ = try server.putRecord(
                Finding(siteCode: "TRT-0000", title: "Seeded finding \(n)", severity: .low), workspace: workspace)
        }
        return known
    }

    /// Readdresses deliveries, adds some, and deletes or reassigns ones the device never edits
    /// (stop 1000 and later), so pulls have changes, tombstones and scope moves to carry.
    static func backOffice(_ server: SyncServer, _ random: inout SplitMix64) throws {
        let workspace = TortureDevice.workspace
        let deliveries = server.records(workspace: workspace).filter { $0.type == "Delivery" }
        guard !deliveries.isEmpty else { return }
        let pick = deliveries[Int(random.next() % UInt64(deliveries.count))]
        var changed = try JSONDecoder().decode(Delivery.self, from: pick.fields)
        changed.id = pick.id
        changed.address = "Rua \(random.next() % 10_000)"
        _ = try server.putRecord(changed, workspace: workspace)
        let stop = random.next() % 2 == 0 ? Int(1 + random.next() % 999) : Int(1000 + random.next() % 1000)
        _ = try server.putRecord(
            Delivery(
                courierId: random.next() % 3 == 0 ? "bob" : TortureDevice.courier, status: .assigned, stopOrder: stop,
                address: "Nova \(stop)"), workspace: workspace)
        let movable = deliveries.filter { record in
            ((try? JSONDecoder().decode(Delivery.self, from: record.fields))?.stopOrder ?? 0) >= 1000
        }
        guard !movable.isEmpty, random.next() % 2 == 0 else { return }
        let target = movable[Int(random.next() % UInt64(movable.count))]
        if random.next() % 2 == 0 {
            _ = try server.deleteRecord("Delivery", id: target.id, workspace: workspace)
        } else {
            var moved = try JSONDecoder().decode(Delivery.self, from: target.fields)
            moved.id = target.id
            moved.courierId = moved.courierId == TortureDevice.courier ? "bob" : TortureDevice.courier
            _ = try server.putRecord(moved, workspace: workspace)
        }
    }

    /// The invariants, each failure named with what broke it.
    static func check(
        seed: UInt64, server: SyncServer, database: String, log: String, partnerRevoked: Bool, into result: inout Result
    ) async throws {
        let plan = TorturePlan(seed: seed)
        let entries = TortureLog.read(log)
        // What the phone kept sealed for support: the partner's work that never went out.
        let inspector = try OutboxInspector(path: database)
        let sealed = try inspector.items(workspace: nil, in: [.sealed])
        let sealedDocuments = Set(sealed.map(\.documentID))
        for item in sealed where !partnerRevoked || item.principal != TortureDevice.partner {
            result.failures.append(
                "item \(item.id) (\(item.documentID)) of \(item.principal ?? "nobody") is sealed: \(item.lastError ?? "")")
        }
        result.captures = entries.count
        let indexes = entries.map(\.index)
        if indexes != Array(0..<indexes.count) { result.failures.append("the log's indexes are not 0…\(indexes.count - 1) in order") }
        let documents = Dictionary(server.documents().map { ($0.documentID, $0) }, uniquingKeysWith: { a, _ in a })
        let serverFiles = Set(server.fileIDs())
        var lanes: [Int64: [(id: Int64, index: Int)]] = [:]
        var lastEdit: [Int64: Int] = [:]
        var removed: Set<Int64> = []
        // Every saved submission is on the server exactly once, files present and remapped.
        for entry in entries {
            switch entry {
            case .customer(let i, let principal), .order(let i, _, let principal), .inspection(let i, let principal):
                let kept = sealedDocuments.contains(plan.documentID(i))
                if principal == TortureDevice.partner { result.partnerCaptures += 1 }
                if kept { result.sealed += 1 }
                guard let document = documents[plan.documentID(i)] else {
                    if !kept {
                        result.failures.append("capture \(i) (\(plan.documentID(i))) was saved on the device but is not on the server")
                    }
                    continue
                }
                if document.appliedWrites != 1 { result.failures.append("capture \(i) was applied \(document.appliedWrites) times") }
                // Sent under its own person's credential, never under the other's.
                if let owner = server.documentOwner(document.documentID), owner != principal {
                    result.failures.append("capture \(i), \(principal)'s, reached the server as \(owner)'s")
                }
                result.documents += 1
                guard let object = try? JSONSerialization.jsonObject(with: document.payload) as? [String: Any] else {
                    result.failures.append("capture \(i)'s server payload is not a JSON object")
                    continue
                }
                if case .inspection = entry {
                    result.inspections += 1
                    continue
                }
                if case .customer = entry {
                    guard let front = object["shop_front"] as? [String: Any], let id = (front["id"] as? NSNumber)?.int64Value else {
                        result.failures.append("customer \(i) has no shop_front on the server")
                        continue
                    }
                    if id <= 0 || !serverFiles.contains(id) {
                        result.failures.append("customer \(i)'s shop_front is \(id), not a file the server holds")
                    } else if server.fileBytes(id) != plan.photo(i) {
                        result.failures.append("customer \(i)'s photo (file \(id)) differs from what was captured")
                    } else {
                        result.files += 1
                        // A completion is a new version that no device's write applied.
                        if document.version > document.appliedWrites { result.deferred += 1 }
                    }
                } else {
                    if (object["customer_reference"] as? String) != plan.marker(i) {
                        result.failures.append("order \(i) carries another order's marker")
                    }
                    guard let customer = (object["customer_id"] as? NSNumber)?.int64Value, customer > 0 else {
                        result.failures.append("order \(i) reached the server without its customer's server id")
                        continue
                    }
                    lanes[customer, default: []].append((document.id, i))
                }
            case .edit(let i, let delivery):
                lastEdit[delivery] = max(lastEdit[delivery] ?? -1, i)
            case .removal(_, let finding):
                removed.insert(finding)
            case .skipped:
                break
            }
        }
        // Lane order: within each customer, the server accepted orders in capture order.
        for (customer, orders) in lanes {
            let accepted = orders.sorted { $0.id < $1.id }.map(\.index)
            if accepted != accepted.sorted() {
                result.failures.append("customer \(customer)'s orders were accepted as \(accepted.prefix(12)), not in capture order")
            }
        }
        result.lanes = lanes.count
        // No document on the server that the device did not make, and none of it twice.
        let planned = Set(
            entries.compactMap { entry -> String? in
                if case .edit = entry { return nil }
                if case .skipped = entry { return nil }
                if case .removal = entry { return nil }
                return plan.documentID(entry.index)
            })
        for document in documents.values where document.documentID.hasPrefix("t\(seed)-") && !planned.contains(document.documentID) {
            // A capture that committed after the last log line (killed before logging it) is
            // logged by the next run under the same index, so nothing should be left over.
            result.failures.append("the server holds \(document.documentID), which the device never logged")
        }
        // Edits: each edited delivery ends with the latest logged edit (or a later one).
        let workspace = TortureDevice.workspace
        let serverRecords = server.records(workspace: workspace)
        for (delivery, index) in lastEdit {
            guard let record = serverRecords.first(where: { $0.type == "Delivery" && $0.id == delivery }),
                let value = try? JSONDecoder().decode(Delivery.self, from: record.fields)
            else {
                result.failures.append("edited delivery \(delivery) is gone from the server")
                continue
            }
            let landed = value.recipient.flatMap { $0.hasPrefix("r") ? Int($0.dropFirst()) : nil } ?? -1
            if landed < index {
                result.failures.append("delivery \(delivery) shows recipient \(value.recipient ?? "nil"); the device saved r\(index) last")
            }
        }
        result.edits = lastEdit.count
        // Inspections: each made its two findings, each once, as records of their own.
        let findings = serverRecords.filter { $0.type == "Finding" }.compactMap {
            try? RecordProjection.decode(Finding.self, fields: $0.fields, id: $0.id, version: $0.version)
        }
        let byTitle = Dictionary(grouping: findings, by: { $0.title ?? "" })
        for case .inspection(let i, _) in entries where documents[plan.documentID(i)] != nil {
            for title in plan.findingTitles(i) where byTitle[title]?.count != 1 {
                result.failures.append("inspection \(i) made \(byTitle[title]?.count ?? 0) finding(s) titled \(title), not one")
            }
        }
        // Removals: every finding the device removed is gone, removed by one document applied
        // once; every seeded finding gone was removed by the device (nobody else removes them).
        var removals: [Int64: Int] = [:]
        for document in documents.values where document.form == "FindingRemoval" {
            let object = try? JSONSerialization.jsonObject(with: document.payload) as? [String: Any]
            guard let finding = (object?["finding_id"] as? NSNumber)?.int64Value else {
                result.failures.append("removal \(document.documentID) names no finding")
                continue
            }
            removals[finding, default: 0] += 1
            if document.appliedWrites != 1 {
                result.failures.append("the removal of finding \(finding) was applied \(document.appliedWrites) times")
            }
        }
        let present = Set(findings.map(\.id))
        for finding in removed where present.contains(finding) {
            result.failures.append("finding \(finding) was removed but is on the server")
        }
        for (finding, count) in removals where count != 1 { result.failures.append("finding \(finding) was removed by \(count) documents") }
        let seeded = (0..<TorturePlan.seededFindings).map { "Seeded finding \($0)" }
        let left = Set(findings.compactMap(\.title)).intersection(seeded).count
        if seeded.count - left != removals.count {
            result.failures.append("\(seeded.count - left) seeded findings are gone, \(removals.count) removed by the device")
        }
        result.removals = removals.count

        // The device: records equal the server's scope; nothing stranded; no orphan stash file.
        let outbox = try Outbox(
            path: database, forms: FormCatalog.forms, records: FormCatalog.records, transport: Unreachable(workspace: workspace))
        // Every person's items: none left anywhere but confirmed (or sealed, above).
        let unsettled = try inspector.items(workspace: nil).filter { $0.state != .confirmed && $0.state != .sealed }
        for (state, items) in Dictionary(grouping: unsettled, by: \.state) {
            let listed = items.prefix(5).map { "\($0.id) \($0.form ?? "file") of \($0.principal ?? "nobody"): \($0.lastError ?? "")" }
            result.failures.append("\(items.count) item(s) stranded as \(state.rawValue): \(listed.joined(separator: "; "))")
        }
        // The records the courier sees.
        if await outbox.currentPrincipal != TortureDevice.courier { try await outbox.signIn(TortureDevice.courier) }
        let (problems, records) = try await RecordConvergence.check(server: serverRecords, outbox: outbox, courier: TortureDevice.courier)
        result.failures += problems
        result.records = records
        let stash = database + ".stash"
        let db = try SQLiteConnection(path: database, create: false)
        // Every customer was filled as a draft; the last run submitted each one.
        let drafts = try db.query("SELECT id FROM drafts ORDER BY id") { $0.text(0) ?? "" }
        if !drafts.isEmpty { result.failures.append("\(drafts.count) draft(s) never submitted: \(drafts.prefix(5))") }
        let referenced = Set(
            try db.query("SELECT file_path FROM items WHERE kind = 'file' AND state != 'confirmed' AND file_path IS NOT NULL") {
                $0.text(0) ?? ""
            })
        for name in (try? FileManager.default.contentsOfDirectory(atPath: stash)) ?? [] {
            let path = (stash as NSString).appendingPathComponent(name)
            if !referenced.contains(path) { result.failures.append("orphan stash file \(name)") }
        }
    }
}

/// A transport that never reaches anything: for reading a device's store after the run.
struct Unreachable: OutboxTransport {
    let workspace: String
    func send(_ request: OutboundRequest) async -> DeliveryOutcome { .unreachable(reason: "reading only") }
    func probe() async -> Bool { false }
}
