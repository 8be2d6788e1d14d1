import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncProtocol
import FormSyncTesting
import Foundation
import Synchronization

/// The device of `formsync-lab torture crash`, run as its own process so it can be killed: it
/// captures the plan's submissions from where its log ends (customers with photos, filled as
/// drafts, orders,
/// edits of pulled deliveries), flushes and pulls between captures, and when every capture is
/// in, drains and pulls until it holds what the server holds. Exits 0 then.
///
/// With a partner's token it is a shared phone: the courier and a partner (`partner`) are both
/// signed in, the capture's person (`TorturePlan.person`) is switched to before each capture,
/// and each item goes out under its own person's credential. When the server revokes the
/// partner, the phone learns it at a refresh, seals the partner's unsent work and goes on as the
/// courier alone.
package struct TortureDevice {
    package var database: String
    /// The server, or the nodes of a cluster (each request to one of them at random).
    package var servers: [URL]
    package var refreshToken: String
    package var log: String
    package var plan: TorturePlan
    package var captures: Int
    /// The ids of the customers the back office created, for orders of known customers.
    package var knownCustomers: [Int64]
    /// Where this process is to die, if anywhere.
    package var crash: (point: CrashPoint, occurrence: Int)?
    /// The partner's refresh token, on a shared phone.
    package var partnerToken: String?

    package static let workspace = "acme"
    package static let courier = "ada"
    /// The second person of a shared phone.
    package static let partner = "cid"

    package init(
        database: String, servers: [URL], refreshToken: String, log: String, plan: TorturePlan, captures: Int, knownCustomers: [Int64],
        crash: (point: CrashPoint, occurrence: Int)?, partnerToken: String? = nil
    ) {
        self.partnerToken = partnerToken
        self.database = database
        self.servers = servers
        self.refreshToken = refreshToken
        self.log = log
        self.plan = plan
        self.captures = captures
        self.knownCustomers = knownCustomers
        self.crash = crash
    }

    /// Opens the device's outbox as the harness configures it: short timeouts and leases, so
    /// a killed process's leases lapse quickly, and uploads resumable from 128 KiB.
    package static func openOutbox(
        database: String, servers: [URL], refreshToken: String, partnerToken: String? = nil,
        partnerRevoked: RevocationFlag = RevocationFlag()
    ) throws -> Outbox {
        let token = Mutex<String?>(nil)
        let partnerAccess = Mutex<String?>(nil)
        let nodes = servers.map { server in
            HTTPTransport(
                workspace: workspace, baseURL: server, timeout: .seconds(1), maxConnections: 4, resumableFromBytes: 128 << 10,
                chunkBytes: 64 << 10
            ) { principal in
                principal == partner ? partnerAccess.withLock { $0 } : token.withLock { $0 }
            }
        }
        let spread = NodeSpreadingTransport(nodes)
        let transport: any OutboxTransport = nodes.count == 1 ? nodes[0] : spread
        return try Outbox(
            path: database, workspace: workspace, registry: FormRegistry(FormCatalog.forms), records: RecordRegistry(FormCatalog.records),
            transports: { $0 == workspace ? transport : nil },
            configuration: Outbox.Configuration(
                concurrency: 3,
                retry: RetryPolicy(
                    baseDelay: .milliseconds(20), maxDelay: .milliseconds(300), maxAttempts: 100_000, maxRetryAfter: .milliseconds(1000)),
                lease: .milliseconds(1500), uploadConcurrency: 2),
            refreshAuthentication: {
                if let partnerToken, !partnerRevoked.isSet {
                    switch await nodes[Int.random(in: 0..<nodes.count)].refresh(RefreshRequest(refreshToken: partnerToken)) {
                    case .issued(let credentials): partnerAccess.withLock { $0 = credentials.accessToken }
                    case .refused(.deviceRevoked, _): partnerRevoked.set()
                    default: break
                    }
                }
                guard let fresh = await nodes[Int.random(in: 0..<nodes.count)].refreshAccessToken(refreshToken: refreshToken) else {
                    return false
                }
                token.withLock { $0 = fresh }
                return true
            })
    }

    /// A shared phone learned at a refresh that the server revoked the partner: the partner's
    /// unsent work is sealed, and the phone goes on as the courier alone.
    private func applyRevocation(_ outbox: Outbox, _ flag: RevocationFlag) async throws {
        guard partnerToken != nil, flag.isSet, await !outbox.revokedPrincipals.contains(Self.partner) else { return }
        try await outbox.personRevoked(Self.partner, reason: "revoked by the server")
        if await outbox.currentPrincipal != Self.courier { try await outbox.signIn(Self.courier) }
    }

    package func run() async throws -> Int32 {
        if let crash { CrashPoint.arm(crash.point, occurrence: crash.occurrence) }
        let revoked = RevocationFlag()
        let outbox = try Self.openOutbox(
            database: database, servers: servers, refreshToken: refreshToken, partnerToken: partnerToken, partnerRevoked: revoked)
        if partnerToken != nil {
            // Both people are on the phone, unless the server revoked the partner (the phone
            // remembers it: `revokedPrincipals`).
            if await outbox.revokedPrincipals.contains(Self.partner) { revoked.set() }
            if await outbox.currentPrincipal == nil { try await outbox.signIn(Self.courier) }
            if !revoked.isSet, await !outbox.signedIn.contains(Self.partner) {
                try await outbox.signIn(Self.partner, current: false)
            }
        }
        var next = (TortureLog.read(log).map(\.index).max() ?? -1) + 1
        let writer = try TortureLog(appendingTo: log)
        defer { writer.close() }
        // Beside the database, not in the temporary folder: the process is killed by design, and
        // its defer never runs; the run's folder goes with the run.
        let scratch = URL(fileURLWithPath: database + ".camera-\(getpid())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        var random = SplitMix64(state: plan.seed ^ UInt64(next) &* 0x2545_F491_4F6C_DD1D)
        var batches = 0
        while next < captures {
            for _ in 0..<(1 + Int(random.next() % 3)) where next < captures {
                try writer.append(try await capture(next, outbox: outbox, scratch: scratch))
                next += 1
            }
            _ = await outbox.flush()
            try await applyRevocation(outbox, revoked)
            batches += 1
            if batches % 2 == 0 { _ = try await outbox.pull(pageSize: 25) }
        }
        // Every capture is in: drain, then pull until the device holds the server's scope.
        let deadline = Date().addingTimeInterval(90)
        while Date() < deadline {
            let report = await outbox.flush()
            try await applyRevocation(outbox, revoked)
            if partnerToken != nil, await outbox.currentPrincipal != Self.courier { try await outbox.signIn(Self.courier) }
            let pulled = try await outbox.pull(pageSize: 25)
            let counts = await outbox.stateCounts()
            let open = [SyncState.savedOnDevice, .waitingForNetwork, .sending, .sent].reduce(0) { $0 + (counts[$1] ?? 0) }
            if open == 0 && report.remaining == 0 && pulled.caughtUp {
                print(
                    "drained: \(counts.filter { $0.value > 0 }.map { "\($0.key.rawValue) \($0.value)" }.sorted().joined(separator: ", "))")
                return 0
            }
            if report.offline { _ = await outbox.probe() }
            if report.offline || report.sent == 0 { try await Task.sleep(for: .milliseconds(50)) }
        }
        print("not drained within 90 s: \(await outbox.stateCounts())")
        return 1
    }

    private func capture(_ index: Int, outbox: Outbox, scratch: URL) async throws -> TortureLog.Entry {
        // On a shared phone, the person the plan names captures it (switching is one write),
        // unless the partner was revoked: then the courier does.
        var person = Self.courier
        if partnerToken != nil {
            if plan.person(index) == Self.partner, await !outbox.revokedPrincipals.contains(Self.partner) { person = Self.partner }
            if await outbox.currentPrincipal != person { try await outbox.signIn(person) }
        }
        switch plan.capture(index) {
        case .customer:
            // Filled through a draft, as an app keeps a form open for an hour: the draft is named
            // by the capture, so a run killed mid-form resumes it, photo included. A draft
            // submitted and gone before the log line is made again and submitted as the same
            // document, which is that item (once means once).
            let draft = DraftID(rawValue: "customer-\(index)")
            let customer = plan.customer(index)
            let held = try await outbox.draft(draft, as: NewCustomer.self)
            if held == nil {
                try await outbox.saveDraft(NewCustomer(name: customer.name), id: draft, documentID: plan.documentID(index))
            }
            if held?.attachments.contains(where: { $0.placeholder == plan.photoPlaceholder(index) }) != true {
                let source = scratch.appendingPathComponent("photo-\(index).jpg")
                try plan.photo(index).write(to: source)
                defer { try? FileManager.default.removeItem(at: source) }
                try await outbox.attach(source, to: draft, placeholder: plan.photoPlaceholder(index), contentType: "image/jpeg")
            }
            try await outbox.saveDraft(customer, id: draft)
            try await outbox.submitDraft(draft, as: NewCustomer.self, creates: plan.customerPlaceholder(index))
            return .customer(index: index, principal: person)
        case .orderForNewCustomer(let customerIndex):
            let customer = plan.customerPlaceholder(customerIndex)
            try await outbox.enqueue(plan.order(index, customer: customer), documentID: plan.documentID(index))
            return .order(index: index, customer: customer, principal: person)
        case .orderForKnownCustomer(let slot):
            let customer = knownCustomers[slot % knownCustomers.count]
            try await outbox.enqueue(plan.order(index, customer: customer), documentID: plan.documentID(index))
            return .order(index: index, customer: customer, principal: person)
        case .deliveryEdit:
            let editable = try await outbox.records(Delivery.all).filter { ($0.stopOrder ?? 0) < 1000 }.sorted { $0.id < $1.id }
            guard !editable.isEmpty else { return .skipped(index: index) }
            let delivery = editable[(index / 6) % editable.count]
            let recipient = plan.recipient(index)
            try await outbox.edit(DeliveryUpdate.self, id: delivery.id) { $0.recipient = recipient }
            return .edit(index: index, delivery: delivery.id)
        case .inspection:
            // Its two findings become Finding records of their own when it lands.
            try await outbox.enqueue(plan.inspection(index), documentID: plan.documentID(index))
            return .inspection(index: index, principal: person)
        case .findingRemoval(let number):
            // A seeded finding, removed once. A run killed after the delete was queued but
            // before its line finds the finding gone from its reads and skips it; the delete
            // still goes out, and the check finds it by its document.
            let title = "Seeded finding \(number)"
            guard let finding = try await outbox.records(Finding.all).first(where: { $0.title == title }) else {
                return .skipped(index: index)
            }
            try await outbox.delete(FindingRemoval.self, id: finding.id) { $0.reason = .duplicate }
            return .removal(index: index, finding: finding.id)
        }
    }
}

/// Whether a refresh was told the partner's credential is revoked (set from the refresh hook,
/// read by the device's loop).
package final class RevocationFlag: Sendable {
    private let state = Mutex(false)

    package init() {}

    package var isSet: Bool { state.withLock { $0 } }

    func set() { state.withLock { $0 = true } }
}
