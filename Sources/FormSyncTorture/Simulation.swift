import FieldForms
import FieldFormsUpdate
import FormSyncClient
import FormSyncModel
import FormSyncServer
import FormSyncTesting
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One seeded schedule of `formsync-lab torture sim`: a device's outbox (real SQLite, real
/// `HTTPTransport`) against the reference server's real handler in-process, through
/// `SimulatedNetwork`, on a virtual clock. A `SyncEngine` runs beside the app the whole time,
/// its waits on the same clock (`VirtualTimers`): it wakes when time passes and after
/// captures, probes after outages and waits out failed token refreshes, as on a device. The
/// schedule also captures, flushes by hand, pulls, takes the
/// network away for long stretches, moves the device's clock both ways, switches workspaces,
/// changes records in the back office, expires tokens, upgrades the app's spec version and
/// reopens the outbox; then the network calms, everything drains, and the invariants are
/// checked: nothing lost, nothing applied twice, lane order kept, every parked item listed with
/// its reason, nothing exhausted by an outage, the device's records equal to the server's.
package struct Simulation {
    /// One step of a schedule.
    package enum Action: Sendable, Equatable, CustomStringConvertible {
        case captureCustomer(photoBytes: Int)
        case captureOrder(slot: Int)
        /// A site inspection whose findings each become a `Finding` record.
        case captureInspection(findings: Int)
        /// A repair planned against a finding, perhaps one whose inspection has not landed.
        case editFinding(slot: Int)
        /// A finding removed through the outbox.
        case removeFinding(slot: Int)
        case editDelivery(slot: Int)
        case editCustomer(slot: Int, creditLimit: Bool)
        case flush
        case engine(milliseconds: Int64)
        case pull
        case advance(milliseconds: Int64)
        case clockJump(milliseconds: Int64)
        case outage(Bool)
        case backOffice(Int)
        case expireTokens
        case switchWorkspace
        case upgradeApp
        case reopen

        package var description: String {
            switch self {
            case .captureCustomer(let bytes): return "capture NewCustomer with a \(bytes)-byte photo"
            case .captureOrder(let slot): return "capture SalesOrder (customer slot \(slot))"
            case .captureInspection(let findings): return "capture SiteInspection with \(findings) finding(s)"
            case .editFinding(let slot): return "plan the repair of a Finding (slot \(slot))"
            case .removeFinding(let slot): return "remove a Finding (slot \(slot))"
            case .editDelivery(let slot): return "edit a pulled Delivery (slot \(slot))"
            case .editCustomer(let slot, let money):
                return "edit a pulled Customer (slot \(slot))\(money ? ", credit limit too (server-owned)" : "")"
            case .flush: return "flush"
            case .engine(let ms): return "the sync engine runs for \(ms) ms"
            case .pull: return "pull"
            case .advance(let ms): return "time passes: \(ms) ms"
            case .clockJump(let ms): return "the device clock jumps \(ms > 0 ? "+" : "")\(ms) ms"
            case .outage(let down): return down ? "the network goes away" : "the network comes back"
            case .backOffice(let n): return "back office change #\(n)"
            case .expireTokens: return "access tokens expire"
            case .switchWorkspace: return "switch workspace"
            case .upgradeApp: return "app update: SalesOrder version \(AppUpdate.nextVersion)"
            case .reopen: return "the app restarts (outbox reopened)"
            }
        }
    }

    /// What a schedule did, and what broke.
    package struct Outcome: Sendable {
        package var failures: [String] = []
        package var trace: [String] = []
        package var captured = 0
        package var confirmed = 0
        package var parked: [String: Int] = [:]
        package var requests = 0
        package var faults: [String: Int] = [:]
        /// How often the sync engine was woken by its own timers (backoff, due items, probes).
        package var engineWakes = 0
    }

    package static func schedule(seed: UInt64, steps: Int) -> [Action] {
        var random = SplitMix64(state: seed)
        var actions: [Action] = []
        var upgraded = false
        for _ in 0..<steps {
            let roll = random.next() % 100
            switch roll {
            case 0..<8:
                actions.append(
                    .captureCustomer(
                        photoBytes: random.next() % 4 == 0 ? 70_000 + Int(random.next() % 80_000) : 500 + Int(random.next() % 4000)))
            case 8..<24: actions.append(.captureOrder(slot: Int(random.next() % 16)))
            case 24..<29: actions.append(.editDelivery(slot: Int(random.next() % 16)))
            case 29..<33: actions.append(.editCustomer(slot: Int(random.next() % 16), creditLimit: random.next() % 5 == 0))
            case 33..<40: actions.append(.flush)
            case 40: actions.append(.captureInspection(findings: 1 + Int(random.next() % 5)))
            case 41: actions.append(.editFinding(slot: Int(random.next() % 16)))
            case 42: actions.append(.removeFinding(slot: Int(random.next() % 16)))
            case 43..<53: actions.append(.engine(milliseconds: 1_000 + Int64(random.next() % 300_000)))
            case 53..<60: actions.append(.pull)
            case 60..<70: actions.append(.advance(milliseconds: Int64(random.next() % 600_000)))
            case 70..<73:
                actions.append(.clockJump(milliseconds: (random.next() % 2 == 0 ? -1 : 1) * Int64(60_000 + random.next() % 172_800_000)))
            case 73..<79: actions.append(.outage(random.next() % 2 == 0))
            case 79..<86: actions.append(.backOffice(Int(random.next() % 1_000_000)))
            case 86..<89: actions.append(.expireTokens)
            case 89..<92: actions.append(.switchWorkspace)
            case 92..<94 where !upgraded:
                upgraded = true
                actions.append(.upgradeApp)
            default: actions.append(.reopen)
            }
        }
        return actions
    }

    let seed: UInt64
    let folder: URL
    let sabotage: Bool

    /// `sabotage` breaks the network (some submissions arrive twice as new documents), to
    /// show that the invariants notice.
    package init(seed: UInt64, folder: URL, sabotage: Bool = false) {
        self.seed = seed
        self.folder = folder
        self.sabotage = sabotage
    }

    /// A captured submission, as the device was told it was saved.
    private struct Captured {
        var workspace: String
        var item: ItemID
        var documentID: String
        var form: String
        /// For orders: the customer whose lane it is in (its placeholder for one created
        /// offline, whichever id the order named).
        var customer: Int64?
        var sequence: Int
    }

    package func run(_ actions: [Action]) async -> Outcome {
        var outcome = Outcome()
        let trace = SimulationTrace()
        let directory = folder.appendingPathComponent("sim-\(seed)-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            try await execute(actions, directory: directory, trace: trace, outcome: &outcome)
        } catch {
            outcome.failures.append("the schedule stopped with an error: \(error)")
        }
        outcome.trace = trace.all
        return outcome
    }

    private func execute(_ actions: [Action], directory: URL, trace: SimulationTrace, outcome: inout Outcome) async throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let time = Mutex<Int64>(1_764_460_800_000)  // the true time, which the server keeps
        let skew = Mutex<Int64>(0)  // how far the device's clock is off
        let server = try SyncServer(
            directory: directory.appendingPathComponent("server").path, registry: try AppUpdate.nextBuild(),
            records: RecordRegistry(FormCatalog.records),
            tokenLifetimeSeconds: 3600, now: { time.withLock { $0 } })
        let workspaces = ["acme", "beta"]
        var known: [String: [Int64]] = [:]
        for workspace in workspaces {
            for n in 0..<3 {
                known[workspace, default: []].append(
                    try server.putRecord(Customer(name: "Known \(workspace) \(n)", segment: .wholesale), workspace: workspace).id)
            }
            for n in 0..<6 {
                _ = try server.putRecord(
                    Delivery(courierId: n % 3 == 2 ? "bob" : "ada", status: .assigned, stopOrder: n + 1, address: "Rua \(n)"),
                    workspace: workspace)
                _ = try server.putRecord(Self.job(n), workspace: workspace)
            }
        }
        let network = SimulatedNetwork(seed: seed, server: server, trace: trace, sabotage: sabotage)
        let refreshToken = try server.issueRefreshToken(principal: "ada", workspaces: workspaces)
        // Both workspaces' transports carry the one token the device holds.
        let tokens = Mutex<String?>(nil)
        var transports: [String: HTTPTransport] = [:]
        for workspace in workspaces {
            transports[workspace] = HTTPTransport(
                workspace: workspace, baseURL: URL(string: "http://sim.invalid")!, timeout: .seconds(5), resumableFromBytes: 64 << 10,
                chunkBytes: 64 << 10,
                network: { try await network.exchange($0, file: $1) }, token: { tokens.withLock { $0 } })
        }
        let transportFor: @Sendable (String) -> (any OutboxTransport)? = { [transports] workspace in transports[workspace] }
        let random = Mutex(SplitMix64(state: seed ^ 0xD1B5_4A32_D192_ED03))
        let ids = SequentialIDs(prefix: "s\(seed)")
        let environment = OutboxEnvironment(
            now: { time.withLock { $0 } + skew.withLock { $0 } },
            random: { random.withLock { Double($0.next() >> 11) / Double(1 << 53) } }, newID: { ids.next() })
        let path = directory.appendingPathComponent("device.sqlite").path
        var registry = FormRegistry(FormCatalog.forms)
        func open(_ registry: FormRegistry, workspace: String) throws -> Outbox {
            try Outbox(
                path: path, workspace: workspace, registry: registry, records: RecordRegistry(FormCatalog.records),
                transports: transportFor,
                configuration: Outbox.Configuration(
                    concurrency: 3,
                    retry: RetryPolicy(
                        baseDelay: .milliseconds(500), maxDelay: .milliseconds(60_000), maxAttempts: 12,
                        maxRetryAfter: .milliseconds(3_600_000)),
                    lease: .milliseconds(30_000), uploadConcurrency: 2),
                environment: environment,
                refreshAuthentication: { [transports] in
                    guard let fresh = await transports["acme"]!.refreshAccessToken(refreshToken: refreshToken) else { return false }
                    tokens.withLock { $0 = fresh }
                    return true
                })
        }
        var workspace = "acme"
        var outbox = try open(registry, workspace: workspace)
        // The device's crew is the north's, in both workspaces: its jobs come by subscription
        // (for years: the device's clock jumps must not end it).
        for name in workspaces.reversed() {
            try await outbox.switchWorkspace(to: name)
            try await outbox.subscribe(Self.crew)
        }
        let engine = SimulatedEngine(
            environment: environment, trueNow: { time.withLock { $0 } }, setTrueTime: { value in time.withLock { $0 = value } },
            trace: trace)
        try await engine.start(outbox)
        var captured: [Captured] = []
        var customers: [String: [Int64]] = known
        var sequence = 0
        let camera = directory.appendingPathComponent("camera")
        try FileManager.default.createDirectory(at: camera, withIntermediateDirectories: true)

        do {
            for (step, action) in actions.enumerated() {
                trace.add("step \(step): \(action)")
                sequence += 1
                switch action {
                case .captureCustomer(let bytes):
                    let photo = camera.appendingPathComponent("p\(sequence).jpg")
                    try MediaSignature.stamped(Data(count: bytes), asFileNamed: photo.lastPathComponent).write(to: photo)
                    let placeholder = outbox.placeholderIDs.next()
                    let id = try await outbox.enqueue(
                        NewCustomer(
                            name: "Sim shop \(sequence)", segment: .retail, shopFront: FileRef(id: placeholder, contentType: "image/jpeg")),
                        attachments: [.init(placeholder: placeholder, source: photo, contentType: "image/jpeg")])
                    try? FileManager.default.removeItem(at: photo)
                    guard let item = try await outbox.item(id) else { throw TortureError("item \(id) vanished after enqueue") }
                    if let created = item.producesPlaceholder { customers[workspace, default: []].append(created) }
                    captured.append(
                        Captured(
                            workspace: workspace, item: id, documentID: item.documentID, form: "NewCustomer", customer: nil,
                            sequence: sequence))
                case .captureOrder(let slot):
                    let list = customers[workspace] ?? []
                    let customer = list[slot % list.count]
                    // Half the orders for a customer created offline that has landed name it by
                    // its server id, as a screen that reloaded it would: one entity, one lane.
                    var reference = customer
                    if customer < 0, slot % 2 == 1, let landed = try await outbox.serverID(forPlaceholder: customer) { reference = landed }
                    let order = SalesOrder(
                        customerId: EntityRef(reference), orderDate: LocalDate("2026-11-30"), customerReference: "s\(sequence)",
                        lines: [.init(sku: "SKU-\(1000 + slot)", quantity: 1 + slot, unitPrice: Money(minorUnits: 250, currency: "EUR"))])
                    let id = try await outbox.enqueue(order)
                    guard let item = try await outbox.item(id) else { throw TortureError("item \(id) vanished after enqueue") }
                    captured.append(
                        Captured(
                            workspace: workspace, item: id, documentID: item.documentID, form: "SalesOrder", customer: customer,
                            sequence: sequence))
                case .captureInspection(let findings):
                    let inspection = SiteInspection(
                        siteCode: "SIM-\(String(format: "%04d", sequence % 10_000))", inspectorId: EntityRef(1),
                        visitDate: LocalDate("2026-12-06"), passed: true, location: GeoPoint(latitude: 38.7, longitude: -9.1),
                        hazards: [.none],
                        findings: (0..<findings).map { n in SiteInspection.Finding(title: "Finding \(sequence).\(n)", severity: .low) })
                    // Every other inspection is filled as a draft over two saves, then submitted.
                    let id: ItemID
                    if sequence % 2 == 0 {
                        var begun = inspection
                        begun.findings = Array(inspection.findings.prefix(1))
                        let draft = try await outbox.saveDraft(begun)
                        _ = try await outbox.saveDraft(inspection, id: draft)
                        id = try await outbox.submitDraft(draft, as: SiteInspection.self)
                    } else {
                        id = try await outbox.enqueue(inspection)
                    }
                    guard let item = try await outbox.item(id) else { throw TortureError("item \(id) vanished after enqueue") }
                    captured.append(
                        Captured(
                            workspace: workspace, item: id, documentID: item.documentID, form: "SiteInspection", customer: nil,
                            sequence: sequence))
                case .editFinding(let slot):
                    let findings = try await outbox.records(Finding.all)
                    guard !findings.isEmpty else { break }
                    do {
                        _ = try await outbox.edit(FindingUpdate.self, id: findings[slot % findings.count].id) { $0.status = .planned }
                    } catch OutboxError.noSuchRecord {
                        trace.add("  (record gone)")
                    }
                case .removeFinding(let slot):
                    let findings = try await outbox.records(Finding.all)
                    guard !findings.isEmpty else { break }
                    do {
                        _ = try await outbox.delete(FindingRemoval.self, id: findings[slot % findings.count].id) { $0.reason = .duplicate }
                    } catch OutboxError.noSuchRecord {
                        trace.add("  (record gone)")
                    }
                case .editDelivery(let slot):
                    let deliveries = try await outbox.records(Delivery.all)
                    guard !deliveries.isEmpty else { break }
                    let target = deliveries[slot % deliveries.count]
                    let recipient = "sim-\(sequence)"
                    do {
                        _ = try await outbox.edit(DeliveryUpdate.self, id: target.id) { $0.recipient = recipient }
                    } catch OutboxError.noSuchRecord {
                        trace.add("  (record gone)")
                    }
                case .editCustomer(let slot, let money):
                    let list = try await outbox.records(Customer.all).filter { $0.id > 0 }
                    guard !list.isEmpty else { break }
                    let target = list[slot % list.count]
                    let phone = "+351 \(sequence)"
                    _ = try await outbox.edit(CustomerUpdate.self, id: target.id) { edit in
                        edit.phone = phone
                        if money { edit.creditLimit = Money(minorUnits: Int64(sequence) * 100, currency: "EUR") }
                    }
                case .flush:
                    let report = await outbox.flush()
                    trace.add("  \(report)")
                    if report.offline { _ = await outbox.probe() }
                case .engine(let ms):
                    try await engine.pass(ms)
                case .pull:
                    let report = try await outbox.pull(pageSize: 7)
                    trace.add("  pulled \(report.upserted) upserted, \(report.deleted) deleted, caught up: \(report.caughtUp)")
                case .advance(let ms):
                    try await engine.pass(ms)
                case .clockJump(let ms):
                    skew.withLock { $0 += ms }
                case .outage(let down):
                    network.setOutage(down)
                case .backOffice(let n):
                    try backOffice(server, workspace: workspaces[n % 2], n)
                case .expireTokens:
                    server.expireAccessTokens()
                case .switchWorkspace:
                    workspace = workspace == "acme" ? "beta" : "acme"
                    try await outbox.switchWorkspace(to: workspace)
                case .upgradeApp:
                    try await engine.stop()
                    registry = try AppUpdate.nextBuild()
                    outbox = try open(registry, workspace: workspace)
                    try await engine.start(outbox)
                case .reopen:
                    try await engine.stop()
                    outbox = try open(registry, workspace: workspace)
                    try await engine.start(outbox)
                }
                try await engine.settle()
            }
        } catch {
            try? await engine.stop()
            throw error
        }
        try await engine.stop()
        outcome.engineWakes = engine.wakes

        // The end of the day: the network calms, the clock is right, everything drains.
        trace.add("drain")
        network.setOutage(false)
        network.calm()
        skew.withLock { $0 = 0 }
        outbox = try open(registry, workspace: workspace)
        for current in [workspace == "acme" ? "beta" : "acme", "beta", "acme"] where current != workspace || current == "acme" {
            try await outbox.switchWorkspace(to: current)
            workspace = current
            var drained = false
            for _ in 0..<400 {
                let report = await outbox.flush()
                if report.offline { _ = await outbox.probe() }
                let pulled = try await outbox.pull(pageSize: 50)
                let counts = await outbox.stateCounts()
                let open = [SyncState.savedOnDevice, .waitingForNetwork, .sending, .sent].reduce(0) { $0 + (counts[$1] ?? 0) }
                if open == 0 && pulled.caughtUp {
                    drained = true
                    break
                }
                let now = environment.now()
                let due = await outbox.nextDueMilliseconds() ?? now
                time.withLock { $0 += max(1000, min(due - now, 3_600_000)) }
            }
            if !drained { outcome.failures.append("workspace \(current) did not drain: \(await outbox.stateCounts())") }
        }
        try await check(server: server, outbox: outbox, captured: captured, workspaces: workspaces, outcome: &outcome)
        outcome.requests = network.requestCount
        outcome.faults = network.faultCounts
    }

    /// The device's subscription, and the region the check expects its jobs from.
    static let crew = RecordSubscription(
        "crew", of: Job.self, where: [.oneOf("region", [Job.Region.north.rawValue])], for: .seconds(10 * 365 * 86_400))

    static func job(_ n: Int) -> Job {
        Job(
            region: [.north, .south, .east][n % 3], dueOn: LocalDate(year: 2026, month: 12, day: 1 + n % 28), siteCode: "SIM-0001",
            title: "Job \(n)", status: .planned)
    }

    private func backOffice(_ server: SyncServer, workspace: String, _ n: Int) throws {
        let records = server.records(workspace: workspace)
        let deliveries = records.filter { $0.type == "Delivery" }
        let customers = records.filter { $0.type == "Customer" }
        switch n % 5 {
        case 0, 1:
            guard !deliveries.isEmpty else { return }
            let pick = deliveries[(n / 5) % deliveries.count]
            var changed = try JSONDecoder().decode(Delivery.self, from: pick.fields)
            changed.id = pick.id
            changed.address = "Rua \(n)"
            if n % 3 == 0 { changed.recipient = "office-\(n)" }
            _ = try server.putRecord(changed, workspace: workspace)
        case 2 where n % 4 == 3:
            // A job is planned, or one moves between the north and the south (into and out of
            // the device's subscription), or is dropped.
            let jobs = records.filter { $0.type == "Job" }
            switch (n / 4) % 3 {
            case 0: _ = try server.putRecord(Self.job(n), workspace: workspace)
            case 1 where !jobs.isEmpty:
                let pick = jobs[(n / 12) % jobs.count]
                var moved = try JSONDecoder().decode(Job.self, from: pick.fields)
                moved.id = pick.id
                moved.region = moved.region == .north ? .south : .north
                _ = try server.putRecord(moved, workspace: workspace)
            default:
                if !jobs.isEmpty { _ = try server.deleteRecord("Job", id: jobs[(n / 12) % jobs.count].id, workspace: workspace) }
            }
        case 2:
            _ = try server.putRecord(
                Delivery(courierId: n % 2 == 0 ? "ada" : "bob", status: .assigned, stopOrder: 1 + n % 50, address: "Nova \(n)"),
                workspace: workspace)
        case 3:
            guard !deliveries.isEmpty else { return }
            let pick = deliveries[(n / 5) % deliveries.count]
            if n % 2 == 0 {
                _ = try server.deleteRecord("Delivery", id: pick.id, workspace: workspace)
            } else {
                var moved = try JSONDecoder().decode(Delivery.self, from: pick.fields)
                moved.id = pick.id
                moved.courierId = moved.courierId == "ada" ? "bob" : "ada"
                _ = try server.putRecord(moved, workspace: workspace)
            }
        default:
            // Now and then the back office removes a finding a device may be editing.
            let findings = records.filter { $0.type == "Finding" }
            if n % 3 == 0, !findings.isEmpty {
                _ = try server.deleteRecord("Finding", id: findings[(n / 5) % findings.count].id, workspace: workspace)
                return
            }
            guard !customers.isEmpty else { return }
            let pick = customers[(n / 5) % customers.count]
            var changed = try JSONDecoder().decode(Customer.self, from: pick.fields)
            changed.id = pick.id
            changed.phone = "+1 \(n)"
            _ = try server.putRecord(changed, workspace: workspace)
        }
    }

    private func check(server: SyncServer, outbox: Outbox, captured: [Captured], workspaces: [String], outcome: inout Outcome) async throws
    {
        outcome.captured = captured.count
        let documents = Dictionary(server.documents().map { ($0.documentID, $0) }, uniquingKeysWith: { a, _ in a })
        var deviceDocuments = Set<String>()
        for workspace in workspaces {
            try await outbox.switchWorkspace(to: workspace)
            for item in try await outbox.items(in: Set(SyncState.allCases)) where item.workspace == workspace {
                deviceDocuments.insert(item.documentID)
            }
            // Every parked or blocked item is listed, with a reason; nothing was exhausted.
            let parked = try await outbox.parkedItems().filter { $0.workspace == workspace }
            let counts = await outbox.stateCounts()
            let attention = SyncState.allCases.filter(\.needsAttention).reduce(0) { $0 + (counts[$1] ?? 0) }
            if parked.count != attention {
                outcome.failures.append("\(workspace): \(attention) items need attention but \(parked.count) are listed")
            }
            for item in parked {
                outcome.parked[item.state.rawValue, default: 0] += 1
                if (item.lastError ?? "").isEmpty {
                    outcome.failures.append("\(workspace): parked item \(item.id) (\(item.state.rawValue)) has no reason")
                }
                if item.state == .exhausted {
                    outcome.failures.append("\(workspace): item \(item.id) was exhausted: \(item.lastError ?? "")")
                }
            }
        }
        // Nothing lost, nothing applied twice.
        var lanes: [String: [(sequence: Int, serverID: Int64)]] = [:]
        for workspace in workspaces {
            try await outbox.switchWorkspace(to: workspace)
            for capture in captured where capture.workspace == workspace {
                guard let item = try await outbox.item(capture.item) else {
                    outcome.failures.append("\(capture.form) \(capture.documentID) is gone from the device")
                    continue
                }
                switch item.state {
                case .confirmed:
                    outcome.confirmed += 1
                    guard let document = documents[capture.documentID] else {
                        outcome.failures.append("\(capture.form) \(capture.documentID) is confirmed on the device but not on the server")
                        continue
                    }
                    if document.appliedWrites != 1 {
                        outcome.failures.append("\(capture.form) \(capture.documentID) was applied \(document.appliedWrites) times")
                    }
                    if let customer = capture.customer {
                        lanes["\(capture.workspace) \(customer)", default: []].append((capture.sequence, document.id))
                    }
                case .rejected, .conflict, .blocked:
                    break  // listed with its reason above
                default:
                    outcome.failures.append("\(capture.form) \(capture.documentID) is stranded as \(item.state.rawValue)")
                }
            }
        }
        for document in documents.values where !deviceDocuments.contains(document.documentID) {
            outcome.failures.append("the server holds \(document.form) \(document.documentID), which the device never made")
        }
        for (lane, orders) in lanes {
            let accepted = orders.sorted { $0.serverID < $1.serverID }.map(\.sequence)
            if accepted != accepted.sorted() { outcome.failures.append("lane \(lane) was accepted out of capture order: \(accepted)") }
        }
        // The records converge: with the parked items settled (discarded), the device holds
        // exactly the server's scope.
        for workspace in workspaces {
            try await outbox.switchWorkspace(to: workspace)
            for _ in 0..<5 {
                let parked = try await outbox.parkedItems().filter { $0.workspace == workspace }
                if parked.isEmpty { break }
                for item in parked { try? await outbox.discard(item.id) }
            }
            let (problems, _) = try await RecordConvergence.check(
                server: server.records(workspace: workspace), outbox: outbox, courier: "ada", jobRegion: .north)
            outcome.failures += problems.map { "\(workspace): \($0)" }
        }
    }
}
