import FieldForms
import FieldFormsUpdate
import FormSyncClient
import FormSyncCommandLine
import FormSyncModel
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

/// `formsync demo`: a field day on one machine. The reference server runs on loopback; each
/// worker captures submissions of every form offline (photos included) into its own outbox; the
/// network then flaps through every fault while the workers' devices sync as separate
/// processes, one of which is killed mid-flush and restarted. The report says what the server
/// holds and whether the invariants held: nothing lost, nothing applied twice.
enum DemoError: Error, CustomStringConvertible {
    case pullFailed(worker: Int, reason: String)
    case backOffice(String)
    case device(String)

    var description: String {
        switch self {
        case .pullFailed(let worker, let reason): return "device \(worker) could not pull its round: \(reason)"
        case .backOffice(let what): return "the back office: \(what)"
        case .device(let what): return "a device: \(what)"
        }
    }
}

enum DemoCommand {
    static let help = """
        usage: formsync demo [--seed N] [--workers W] [--items I] [--keep DIR] [--bandwidth BYTES_PER_SECOND]

        Simulates a field day. In the morning the back office assigns each worker's round
        (deliveries scoped to that courier, customers shared by all) and each device pulls its
        own. W workers (default 3) then each capture I submissions (default 8) of every form
        while offline, and edit records they pulled, while the back office readdresses,
        reassigns and deletes deliveries and changes customers. Mid-day the app is updated:
        every device but the last switches to the next SalesOrder version (a field renamed, a
        required field with a default) with its orders of the version before still queued. Then they sync (each device
        runs a SyncEngine in its own process) through captive portals, 503s, 429s, lost
        replies, slow replies, expired tokens, a long outage in which no server answers, and
        a device whose clock ran 72 h ahead during capture, with one device process killed mid-flush and restarted; each
        device pulls again at the end of the day. Prints per-form and per-state counts, what
        the server holds, duplicates (must be 0), whether every device's records equal the
        server's scope for its courier, parked items and a timeline. Exit status 0 only when
        every invariant holds. Every device enrols from a link the back office made; mid-day a
        further courier's phone is reported lost and revoked: it seals what it had not sent,
        and support recovers that from its support bundle onto the courier's new phone (the
        report says what was delivered, sealed and recovered). Each worker attaches one photo to a delivery and to an
        inspection (sent once), and the report says how long after the devices began to sync
        each delivery reached the server, and its photos; --bandwidth makes the server read
        at most that many bytes per second from all devices together (a 2G uplink: 20000).
        The same seed captures the same data and plans the same faults.
        """

    static func run(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(raw, options: ["--seed", "--workers", "--items", "--keep", "--bandwidth"], flags: ["--help", "-h"])
        if args.flags.contains("--help") || args.flags.contains("-h") {
            print(help)
            return 0
        }
        let seed = UInt64(try args.integer("--seed", default: 42, in: 0...Int.max))
        let workers = try args.integer("--workers", default: 3)
        let items = try args.integer("--items", default: 8)
        guard (1...20).contains(workers), (1...200).contains(items) else { throw UsageError("--workers 1…20 and --items 1…200") }
        let folder =
            args.values["--keep"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("formsync-demo-\(UUID().uuidString)")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { if args.values["--keep"] == nil { try? FileManager.default.removeItem(at: folder) } }
        var demo = try FieldDay(folder: folder, seed: seed, workers: workers, items: items)
        demo.bandwidth = try args.integer("--bandwidth", default: 0, in: 0...1_000_000_000)
        return try await demo.run()
    }
}

struct FieldDay {
    let folder: URL
    let workers: Int
    let items: Int
    var random: SplitMix64
    let started = Date()
    var timeline: [String] = []
    /// Every captured document: its form and the marker that makes its content unique.
    var captured: [(worker: Int, documentID: String, form: String, marker: String)] = []
    var photos = 0
    /// Bytes of distinct files captured, and the documents holding the shared photo.
    var fileBytes = 0
    var sharedPhotoHolders: [String] = []
    /// The server's read limit in bytes per second (0: none).
    var bandwidth = 0
    /// The devices' request timeout in seconds: 3, or 15 on a slow uplink, where a request
    /// shares the link with uploads.
    var deviceTimeout: Int { bandwidth > 0 ? 15 : 3 }
    /// When each delivery, and all its photos, reached the server (seconds after the sync began).
    var deliveredAfter: [String: Double] = [:]
    var photosAfter: [String: Double] = [:]
    /// SHA-256 over every captured document's identity and payload, in capture order.
    var fingerprint = SHA256()
    var captureFingerprint = ""
    /// What became of the phone reported lost mid-day.
    var lostPhone: LostPhone?
    /// The interrupted form and the crews' jobs.
    var fieldWork = FieldWork()

    init(folder: URL, seed: UInt64, workers: Int, items: Int) throws {
        self.folder = folder
        self.workers = workers
        self.items = items
        random = SplitMix64(state: seed)
    }

    mutating func note(_ event: String) {
        let line = String(format: "%6.2fs  ", Date().timeIntervalSince(started)) + event
        timeline.append(line)
        printError("  " + line)
    }

    mutating func run() async throws -> Int32 {
        // The server was updated first: it speaks the built and the next SalesOrder versions all day.
        let server = try SyncServer(
            directory: folder.appendingPathComponent("server").path, registry: try AppUpdate.nextBuild(),
            records: RecordRegistry(FormCatalog.records))
        let port = try server.start()
        defer { server.stop() }
        note("server listening on 127.0.0.1:\(port)")
        var office = try openBackOffice(server)
        note("the back office registered a webhook receiver (the demo runs it on 127.0.0.1:\(office.receiver.port))")

        // 0. Morning, with signal: the back office assigns the rounds and enrols each device from a
        // link (as a QR code would give it); each device pulls its own round.
        try seedBackOffice(server)
        for worker in 1...workers {
            let device = try await enrol(vault(worker), principal: courier(worker), server: server)
            note("device \(worker) enrolled for \(courier(worker)) as \(device)")
            let pulled = try await morningPull(worker: worker, server: server)
            note("device \(worker) pulled its round: \(pulled) records (its deliveries, the shared customers and its crew's jobs)")
        }

        // 1. Capture offline: nothing can reach the server. Device 1's app is killed mid-form first.
        try await killMidForm(server: server)
        for worker in 1...workers { try await capture(worker: worker) }
        note("captured \(captured.count) submissions and \(photos) files offline on \(workers) devices")
        var digest = fingerprint
        captureFingerprint = digest.finalize().prefix(8).map { String(format: "%02x", $0) }.joined()
        // Meanwhile the back office changes the rounds the devices carry.
        try backOfficeWhileOut(server)
        // Mid-day, one more courier's phone is reported lost.
        lostPhone = try await loseAPhone(server)

        // 2. The network flaps: the faults are planned up front from the seed.
        let plan: [(FaultPlan.Fault, Int, FaultPlan.Target, String)] = [
            (.captivePortal, 6 + Int(random.next() % 6), .all, "captive portal at the filling station"),
            (.unavailable(retryAfterSeconds: 1), 3, .submissions, "503 with Retry-After: 1"),
            (.dropAfterCommit, 4 + Int(random.next() % 4), .all, "replies lost after the server committed"),
            (.tooManyRequests(retryAfterSeconds: 1), 3, .files, "429 on uploads"),
            (
                .delay(milliseconds: (deviceTimeout + 1) * 1000), 2, .submissions,
                "replies slower than the \(deviceTimeout) s client timeout"
            ),
            (.unauthorized, 3, .submissions, "tokens expired"),
        ]
        for (fault, count, target, label) in plan {
            server.faults.add(fault, count: count, target: target)
            note("fault planned: \(label) ×\(count)")
        }

        // A slow uplink, when asked for: the sync's deadlines grow with the bytes it must carry.
        server.faults.limitBandwidth(bytesPerSecond: bandwidth)
        let syncSeconds = 55 + (bandwidth > 0 ? Double(fileBytes) / Double(bandwidth) * 1.5 : 0)
        if bandwidth > 0 {
            note("the server reads at most \(bandwidth / 1000) KB/s from all devices together (\(fileBytes / 1000) KB of files to carry)")
        }
        let syncStarted = Date()

        // 3. Sync: each device is its own process. Worker 1's is killed mid-flush and restarted.
        guard let path = Bundle.main.executablePath else { throw UsageError("cannot find the formsync executable to start the devices") }
        let executable = URL(fileURLWithPath: path)
        func device(_ worker: Int) throws -> Process {
            let process = Process()
            process.executableURL = executable
            process.arguments =
                [
                    "demo-device", "--db", database(worker).path, "--server", server.baseURL.absoluteString, "--vault",
                    vault(worker).path,
                    "--clock-skew-ms", String(worker == clockAheadWorker ? -clockAhead : 0), "--deadline", String(Int(syncSeconds)),
                    "--timeout", String(deviceTimeout),
                    "--lease-ms", String(max(8000, (deviceTimeout + 5) * 1000)),
                ] + (updated(worker) ? ["--next-build"] : [])
            // Each device's own account (engine states, passes) goes to a log beside its outbox;
            // a failed run prints the end of it.
            let log = deviceLog(worker)
            if !FileManager.default.fileExists(atPath: log.path) { _ = FileManager.default.createFile(atPath: log.path, contents: nil) }
            let handle = try FileHandle(forWritingTo: log)
            handle.seekToEndOfFile()
            process.standardOutput = handle
            try process.run()
            return process
        }
        // One device's clock ran 72 h ahead while it captured and has been corrected since: its
        // items carry due times three days in the future, and must go out all the same.
        let clockAheadWorker = workers >= 2 ? 2 : 1
        let clockAhead: Int64 = 72 * 3_600_000
        note("device \(clockAheadWorker)'s clock ran 72 h ahead during capture (corrected before sync)")
        let updatedList = (1...workers).filter(updated).map(String.init).joined(separator: ", ")
        note(
            "app update mid-day: device\(workers > 2 ? "s" : "") \(updatedList) now run\(workers > 2 ? "" : "s") SalesOrder version \(AppUpdate.nextVersion) with their version \(SalesOrder.formVersion) orders still queued"
                + (workers >= 2 ? "; device \(workers) stays on the old build" : ""))
        var processes: [Int: Process] = [:]
        for worker in 1...workers { processes[worker] = try device(worker) }
        note("\(workers) device processes syncing")
        // Device 1 is killed the moment the server commits a seeded number of documents, before
        // that write's reply goes out: it dies mid-flush with requests on the wire.
        let killAt = 1 + Int(random.next() % UInt64(max(1, captured.count / 3)))
        let victim = Mutex<Process?>(processes[1])
        server.afterCommit = { documents in
            victim.withLock { process in
                guard let target = process, target.isRunning, documents >= killAt else { return }
                kill(target.processIdentifier, SIGKILL)
                process = nil
            }
        }
        let killDeadline = Date().addingTimeInterval(20)
        while victim.withLock({ $0 != nil }), processes[1]?.isRunning == true, Date() < killDeadline {
            watchDeliveries(server, since: syncStarted)
            try await Task.sleep(for: .milliseconds(10))
        }
        server.afterCommit = nil
        let wasKilled = victim.withLock { $0 == nil }
        if wasKilled, let killed = processes[1] {
            killed.waitUntilExit()
            note("device 1 killed mid-flush (SIGKILL) when the server reached \(killAt) documents")
            processes[1] = try device(1)
            note("device 1 restarted on the same outbox")
        } else {
            note("device 1 finished before the planned kill at \(killAt) documents")
        }
        // A long outage: no server answers at all (health checks included) while the devices
        // sync. Their engines stop draining, probe with backoff, and resume when it ends.
        let outage = 4 + Double(random.next() % 3)
        server.faults.outage(seconds: outage)
        note("outage: no server answers for \(Int(outage)) s")
        let deadline = Date().addingTimeInterval(syncSeconds + 5)
        var progress = ProgressLine()
        func syncing() -> String {
            "  syncing: server holds \(server.documents().count)/\(captured.count) documents, \(server.fileIDs().count)/\(photos) files"
        }
        while processes.values.contains(where: \.isRunning), Date() < deadline {
            progress.update(syncing())
            watchDeliveries(server, since: syncStarted)
            try await Task.sleep(for: .milliseconds(50))
        }
        watchDeliveries(server, since: syncStarted)
        progress.finish(syncing())
        for (worker, process) in processes {
            if process.isRunning {
                process.terminate()
                note("device \(worker) did not finish in time")
            } else {
                note("device \(worker) drained (exit \(process.terminationStatus))")
            }
        }
        // Evening at the depot, once every device is done: each pulls what the others sent since.
        for worker in 1...workers {
            let pulled = try await morningPull(worker: worker, server: server)
            note("device \(worker) final sync: \(pulled) records")
        }
        // The back office's evening: one delivery sent back and fixed, the day exported, and
        // every event of the day at the receiver.
        try await sendBackAndFix(server, &office)
        try await exportDay(server, &office)
        let events = office.exportEvents
        let waitUntil = Date().addingTimeInterval(30)
        while office.deliveries(expected: events).unique < events, Date() < waitUntil {
            try await Task.sleep(for: .milliseconds(100))
        }
        note("the webhook receiver holds \(office.deliveries(expected: events).unique) of the day's \(events) events")
        return try await report(server, office)
    }

    /// Notes when each delivery reached the server, and when all its photos had.
    mutating func watchDeliveries(_ server: SyncServer, since start: Date) {
        let now = Date().timeIntervalSince(start)
        for entry in captured where entry.form == "DeliveryConfirmation" && photosAfter[entry.documentID] == nil {
            guard let held = server.document(entry.documentID) else { continue }
            if deliveredAfter[entry.documentID] == nil { deliveredAfter[entry.documentID] = now }
            if let delivery = try? JSONDecoder().decode(DeliveryConfirmation.self, from: held.payload),
                delivery.proofPhotos.allSatisfy({ $0.id > 0 })
            {
                photosAfter[entry.documentID] = now
            }
        }
    }

    func deviceLog(_ worker: Int) -> URL {
        folder.appendingPathComponent("device-\(worker).log")
    }

    func database(_ worker: Int) -> URL {
        folder.appendingPathComponent("device-\(worker).sqlite")
    }

    /// The device's credential vault (`FileCredentialVault`): its refresh token, rotated.
    func vault(_ worker: Int) -> URL {
        folder.appendingPathComponent("device-\(worker).credentials")
    }

    mutating func pick<T>(_ values: [T]) -> T {
        values[Int(random.next() % UInt64(values.count))]
    }

    mutating func file(_ name: String, bytes: Int) throws -> URL {
        let url = folder.appendingPathComponent(name)
        var data = Data(count: bytes)
        for i in stride(from: 0, to: bytes, by: 8) {
            var word = random.next()
            withUnsafeBytes(of: &word) { raw in
                for j in 0..<min(8, bytes - i) { data[i + j] = raw[j] }
            }
        }
        try MediaSignature.stamped(data, asFileNamed: name).write(to: url)
        photos += 1
        fileBytes += bytes
        return url
    }

    /// One worker's offline day: a new customer and orders for it, deliveries with photos and a
    /// signature, and a site inspection with photos per finding.
    mutating func capture(worker: Int) async throws {
        // Capture runs on a seeded clock and seeded identities, so a seed captures the same bytes.
        let ids = SeededIDs(seed: random.next())
        let clock = ManualClock(1_796_025_600_000)
        let outbox = try Outbox(
            path: database(worker).path, forms: FormCatalog.forms, records: FormCatalog.records, transport: OfflineTransport(),
            environment: OutboxEnvironment(
                now: {
                    clock.advance(by: 1)
                    return clock.now
                }, random: { 0.5 }, newID: { ids.next() }))
        let round = try await outbox.records(Delivery.all)
        let customers = try await outbox.records(Customer.all)
        func record(_ id: ItemID, _ form: String, _ marker: String) async throws {
            guard let item = try await outbox.item(id) else { return }
            captured.append((worker, item.documentID, form, marker))
            fingerprint.update(Data(item.documentID.utf8))
            fingerprint.update(item.payload ?? Data())
        }
        // The courier whose app was killed mid-form opens it again and finishes the delivery.
        if worker == 1, let resumed = try await resumeDraft(outbox) {
            try await record(resumed, "DeliveryConfirmation", "w1-resumed")
            note("device 1 resumed its draft: both photos there, signature taken, submitted")
        }
        // The crew starts and finishes the first job of its region offline.
        if let job = try await outbox.records(Job.all).min(by: { $0.id < $1.id }) {
            let marker = "w\(worker)-job"
            try await record(
                try await outbox.edit(JobUpdate.self, id: job.id) {
                    $0.status = .done
                    $0.note = marker
                }, "JobUpdate", marker)
        }
        let customer = outbox.placeholderIDs.next()
        let shop = outbox.placeholderIDs.next()
        let shopMarker = "w\(worker)-customer"
        var newCustomer = NewCustomer(
            name: "Shop \(shopMarker)", segment: pick([.retail, .wholesale, .horeca]),
            shopLocation: GeoPoint(latitude: 38.7 + Double(worker) / 100, longitude: -9.1),
            shopFront: FileRef(id: shop, contentType: "image/jpeg"), region: pick([.north, .south, .islands]))
        // The district list is the one the region offers (`choice_filter:`), as a form shows it.
        newCustomer.district = NewCustomer.District(rawValue: pick(newCustomer.offeredOptions(for: .district)))
        try await record(
            try await outbox.enqueue(
                newCustomer,
                attachments: [.init(placeholder: shop, source: try file("w\(worker)-shop.jpg", bytes: 40_000), contentType: "image/jpeg")],
                creates: customer),
            "NewCustomer", newCustomer.name!)
        // One photo of the damage, attached to the first delivery and to the first inspection:
        // stashed once and sent once (70 KB: large enough to be looked up by its digest).
        let damage = try file("w\(worker)-damage.jpg", bytes: 70_000)
        let damageAgain = folder.appendingPathComponent("w\(worker)-damage-again.jpg")
        try FileManager.default.copyItem(at: damage, to: damageAgain)
        var sharedUsed = (delivery: false, inspection: false)
        for n in 0..<items {
            let marker = "w\(worker)-i\(n)"
            switch n % 3 {
            case 0:
                let lines = 1 + Int(random.next() % 40)
                let order = SalesOrder(
                    customerId: EntityRef(customer), orderDate: LocalDate("2026-11-30"), customerReference: marker,
                    lines: (0..<lines).map { l in
                        .init(
                            sku: "SKU-\(1000 + l)", quantity: 1 + l % 9, unitPrice: Money(minorUnits: Int64(150 + l * 10), currency: "EUR"))
                    })
                try await record(try await outbox.enqueue(order), "SalesOrder", marker)
            case 1:
                // (The delivery holding the damage photo takes at most three more: four in all.)
                let count = min(1 + Int(random.next() % 4), sharedUsed.delivery ? 4 : 3)
                var attachments: [Outbox.Attachment] = []
                var refs: [FileRef] = []
                for p in 0..<count {
                    let id = outbox.placeholderIDs.next()
                    refs.append(FileRef(id: id, contentType: "image/jpeg"))
                    attachments.append(
                        .init(
                            placeholder: id, source: try file("\(marker)-p\(p).jpg", bytes: 20_000 + Int(random.next() % 60_000)),
                            contentType: "image/jpeg"))
                }
                if !sharedUsed.delivery {
                    let id = outbox.placeholderIDs.next()
                    refs.append(FileRef(id: id, contentType: "image/jpeg"))
                    attachments.append(.init(placeholder: id, source: damage, contentType: "image/jpeg"))
                }
                let signature = outbox.placeholderIDs.next()
                attachments.append(
                    .init(placeholder: signature, source: try file("\(marker)-sig.png", bytes: 3000), contentType: "image/png"))
                let delivery = DeliveryConfirmation(
                    deliveryId: EntityRef(round[n % round.count].id), outcome: .delivered, deliveredAt: Timestamp("2026-11-30T09:00:00Z"),
                    codAmount: Money(minorUnits: Int64(random.next() % 20_000), currency: "EUR"), recipientName: marker,
                    proofPhotos: refs, signature: FileRef(id: signature, contentType: "image/png"))
                try await record(try await outbox.enqueue(delivery, attachments: attachments), "DeliveryConfirmation", marker)
                if !sharedUsed.delivery { sharedPhotoHolders.append(captured.last!.documentID) }
                sharedUsed.delivery = true
            default:
                let photo = outbox.placeholderIDs.next()
                let findingPhoto = sharedUsed.inspection ? try file("\(marker)-f.jpg", bytes: 30_000) : damageAgain
                // A failed site gets its reason; on a passed one a reason typed earlier does not
                // apply (`relevant:`), and `recalculated()` clears it before it is queued.
                let passed = random.next() % 2 == 0
                let inspection = SiteInspection(
                    siteCode: String(format: "LIS-%04d", worker * 100 + n), inspectorId: EntityRef(Int64(worker)),
                    visitDate: LocalDate("2026-11-30"), arrivalTime: LocalTime(hour: 9, minute: n),
                    departureTime: LocalTime(hour: 10, minute: n), passed: passed,
                    failureReason: passed ? (random.next() % 2 == 0 ? "typed before the site passed" : nil) : "Finding \(marker) failed",
                    location: GeoPoint(latitude: 38.72, longitude: -9.14), hazards: [pick([.electrical, .gas, .height])],
                    // Two findings, each a Finding record of its own once the inspection lands.
                    findings: [
                        .init(title: "Finding \(marker)", severity: .medium, photos: [FileRef(id: photo, contentType: "image/jpeg")]),
                        .init(title: "Loose cover \(marker)", severity: .low),
                    ])
                let inspected = try await outbox.enqueue(
                    inspection, attachments: [.init(placeholder: photo, source: findingPhoto, contentType: "image/jpeg")])
                try await record(inspected, "SiteInspection", "Finding \(marker)")
                // The loose cover is fixed on the spot: its finding, created offline a moment ago,
                // is closed offline too (the edit waits for the inspection and its version).
                if let cover = try await outbox.itemRecordPlaceholders(of: inspected)["findings"]?.last {
                    try await record(
                        try await outbox.edit(FindingUpdate.self, id: cover) {
                            $0.status = .fixed
                            $0.note = "tightened on the spot"
                        }, "FindingUpdate", "closed \(marker)")
                }
                if !sharedUsed.inspection { sharedPhotoHolders.append(captured.last!.documentID) }
                sharedUsed.inspection = true
            }
        }
        // Edits of pulled records, based on what the device holds: a note on the first stop, the
        // recipient of the third (which the back office readdresses meanwhile: merged at send),
        // and the phone of one shared customer.
        let note = "w\(worker)-note"
        try await record(try await outbox.edit(DeliveryUpdate.self, id: round[0].id) { $0.notes = note }, "DeliveryUpdate", note)
        let recipient = "w\(worker)-recipient"
        try await record(
            try await outbox.edit(DeliveryUpdate.self, id: round[2].id) { $0.recipient = recipient }, "DeliveryUpdate", recipient)
        let phone = "+351 91\(worker) 000 000"
        try await record(
            try await outbox.edit(CustomerUpdate.self, id: customers[(worker - 1) % customers.count].id) { $0.phone = phone },
            "CustomerUpdate", phone)
    }

    func courier(_ worker: Int) -> String { "courier-\(worker)" }

    /// Whether the worker's app was updated to the next build (all but the last, when there are several).
    func updated(_ worker: Int) -> Bool { workers == 1 || worker < workers }

    /// The back office assigns six deliveries to each worker and four to a courier with no
    /// device here, and keeps a list of customers every device receives.
    func seedBackOffice(_ server: SyncServer) throws {
        for worker in 1...workers + 1 {
            let courier = worker > workers ? "courier-x" : courier(worker)
            for stop in 1...(worker > workers ? 4 : 6) {
                try server.putRecord(
                    Delivery(
                        courierId: courier, status: .assigned, stopOrder: stop, address: "Rua \(worker * 10 + stop), Lisboa",
                        codAmount: Money(minorUnits: Int64(stop * 1250), currency: "EUR")),
                    workspace: "demo")
            }
        }
        for n in 1...max(3, workers) {
            try server.putRecord(Customer(name: "Customer \(n)", email: "c\(n)@example.pt", segment: .retail), workspace: "demo")
        }
        try seedJobs(server)
    }

    /// Pulls a device's records at the depot (before it leaves, and after the day), under the
    /// credentials in its vault.
    func morningPull(worker: Int, server: SyncServer) async throws -> Int {
        let credentials = try await DeviceCredentials(vault: FileCredentialVault(path: vault(worker).path), device: Self.report(worker))
        let transport = HTTPTransport(workspace: "demo", baseURL: server.baseURL, timeout: .seconds(5)) {
            await credentials.accessToken()
        }
        let outbox = try Outbox(
            path: database(worker).path, forms: FormCatalog.forms, records: FormCatalog.records, transport: transport,
            refreshAuthentication: { await credentials.refresh() })
        // The device holds its crew's jobs only, not every region's.
        try await outbox.subscribe(Self.crewSubscription(worker))
        let report = try await outbox.pull()
        guard report.caughtUp else { throw DemoError.pullFailed(worker: worker, reason: String(describing: report.stoppedBecause)) }
        return try await outbox.storedRecordCount()
    }

    /// While the devices are out: the third stop of every round is readdressed (each device
    /// changed its recipient), the sixth is cancelled and deleted, device 1's fifth stop moves
    /// to device 2 (or to the courier without a device), and every customer's email changes.
    mutating func backOfficeWhileOut(_ server: SyncServer) throws {
        var changed = 0
        for record in server.records(workspace: "demo") {
            if record.type == "Customer" {
                var customer = try JSONDecoder().decode(Customer.self, from: record.fields)
                customer.email = "office\(record.id)@example.pt"
                try server.putRecord("Customer", id: record.id, fields: try FormRegistry.encode(customer), workspace: "demo")
                changed += 1
                continue
            }
            if record.type == "Job" {
                // The north crew's second job goes to the west crew: it leaves the north phones.
                var job = try JSONDecoder().decode(Job.self, from: record.fields)
                guard job.region == .north, job.dueOn == LocalDate("2026-12-01") else { continue }
                job.region = .west
                try server.putRecord("Job", id: record.id, fields: try FormRegistry.encode(job), workspace: "demo")
                changed += 1
                continue
            }
            guard record.type == "Delivery" else { continue }
            var fields = try JSONDecoder().decode(Delivery.self, from: record.fields)
            guard let stop = fields.stopOrder, fields.courierId != "courier-x" else { continue }
            switch stop {
            case 3:
                fields.address = (fields.address ?? "") + ", 2º andar"
                try server.putRecord("Delivery", id: record.id, fields: try FormRegistry.encode(fields), workspace: "demo")
            case 5 where fields.courierId == courier(1):
                fields.courierId = workers >= 2 ? courier(2) : "courier-x"
                try server.putRecord("Delivery", id: record.id, fields: try FormRegistry.encode(fields), workspace: "demo")
            case 6:
                try server.deleteRecord("Delivery", id: record.id, workspace: "demo")
            default:
                continue
            }
            changed += 1
        }
        note(
            "back office, while the devices are out: readdressed, reassigned and deleted deliveries, changed customers (\(changed) records)"
        )
    }

    /// The report, and the verdict on the invariants.
    func report(_ server: SyncServer, _ office: DemoBackOffice) async throws -> Int32 {
        print("\nFormSync demo: \(workers) workers × \(items) items, \(captured.count) submissions, \(photos) files")
        print("captured data fingerprint: \(captureFingerprint) (the same seed captures the same data and plans the same faults)")
        print("\nOn the devices (per form and state):")
        var states: [String: [SyncState: Int]] = [:]
        var parked: [String] = []
        var uploads: [SyncState: Int] = [:]
        var ordersUpgraded = 0
        var ordersOnUpdated = 0
        var ordersOnOldBuild = 0
        var ordersOldBuildStayedV1 = 0
        for worker in 1...workers {
            let outbox = try Outbox(path: database(worker).path, forms: FormCatalog.forms, transport: OfflineTransport())
            for item in try await outbox.items(in: Set(SyncState.allCases)) {
                if item.form == "SalesOrder" {
                    if updated(worker) {
                        ordersOnUpdated += 1
                        if item.formVersion == AppUpdate.nextVersion { ordersUpgraded += 1 }
                    } else {
                        ordersOnOldBuild += 1
                        if item.formVersion == SalesOrder.formVersion { ordersOldBuildStayedV1 += 1 }
                    }
                }
                if let form = item.form {
                    states[form, default: [:]][item.state, default: 0] += 1
                } else {
                    uploads[item.state, default: 0] += 1
                }
                if item.state.needsAttention {
                    parked.append("device \(worker): \(item.form ?? "file") #\(item.id) \(item.state.rawValue): \(item.lastError ?? "")")
                }
            }
        }
        states["(file uploads)"] = uploads
        for form in states.keys.sorted() {
            let counts = states[form]!.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \($0.value)" }
            print("  \(form.padding(toLength: 22, withPad: " ", startingAt: 0)) \(counts.joined(separator: ", "))")
        }
        let documents = server.documents()
        print("\nOn the server:")
        for form in Set(documents.map(\.form)).sorted() {
            print("  \(form.padding(toLength: 22, withPad: " ", startingAt: 0)) \(documents.filter { $0.form == form }.count) documents")
        }
        print("  files                  \(server.fileIDs().count)")
        let log = server.requestLog()
        print(
            "  requests seen          \(log.count) (\(log.filter(\.replayed).count) idempotent replays, \(log.filter { $0.status == nil }.count) replies dropped)"
        )

        // Invariants.
        let held = Dictionary(grouping: documents, by: \.documentID)
        let missing = captured.filter { held[$0.documentID] == nil }
        let contents = documents.map { String(decoding: $0.payload, as: UTF8.self) }
        let duplicates = captured.filter { entry in contents.filter { $0.contains("\"\(entry.marker)\"") }.count > 1 }
        // The document the supervisor sent back was written twice: once captured, once fixed.
        let appliedTwice = documents.filter { $0.appliedWrites != ($0.documentID == office.sentBack ? 2 : 1) }
        let unresolved = documents.filter { $0.payload.range(of: Data("\"id\":-".utf8)) != nil }
        // Both directions: each device's records equal the server's scope for its courier.
        var diverged: [String] = []
        var recordsHeld = 0
        var jobsHeld = 0
        let serverRecords = server.records(workspace: "demo")
        for worker in 1...workers {
            let outbox = try Outbox(
                path: database(worker).path, forms: FormCatalog.forms, records: FormCatalog.records, transport: OfflineTransport())
            var device: [String: (Int, Data)] = [:]
            for record in try await outbox.records(Delivery.all) {
                device["Delivery \(record.id)"] = (record.version, try FormRegistry.encode(record))
            }
            for record in try await outbox.records(Customer.all) {
                device["Customer \(record.id)"] = (record.version, try FormRegistry.encode(record))
            }
            for record in try await outbox.records(Finding.all) {
                device["Finding \(record.id)"] = (record.version, try FormRegistry.encode(record))
            }
            for record in try await outbox.records(Job.all) {
                device["Job \(record.id)"] = (record.version, try FormRegistry.encode(record))
            }
            recordsHeld += device.count
            // Jobs: the device's region's only (its subscription), every one of them.
            let region = FieldWork.region(worker).rawValue
            let scope = serverRecords.filter {
                ($0.scope.isEmpty || $0.scope == courier(worker))
                    && ($0.type != "Job"
                        || (try? RecordProjection.decode(Job.self, fields: $0.fields, id: $0.id, version: $0.version))?.region?.rawValue
                            == region)
            }
            jobsHeld += device.keys.filter { $0.hasPrefix("Job ") }.count
            for record in scope {
                let key = "\(record.type) \(record.id)"
                guard let mine = device.removeValue(forKey: key) else {
                    diverged.append("device \(worker) lacks \(key)")
                    continue
                }
                let theirs: Data
                switch record.type {
                case "Delivery":
                    theirs = try FormRegistry.encode(
                        RecordProjection.decode(Delivery.self, fields: record.fields, id: record.id, version: record.version))
                case "Finding":
                    theirs = try FormRegistry.encode(
                        RecordProjection.decode(Finding.self, fields: record.fields, id: record.id, version: record.version))
                case "Job":
                    theirs = try FormRegistry.encode(
                        RecordProjection.decode(Job.self, fields: record.fields, id: record.id, version: record.version))
                default:
                    theirs = try FormRegistry.encode(
                        RecordProjection.decode(Customer.self, fields: record.fields, id: record.id, version: record.version))
                }
                if mine.0 != record.version || mine.1 != theirs {
                    diverged.append("device \(worker) holds \(key) at version \(mine.0), the server at \(record.version)")
                }
            }
            for extra in device.keys.sorted() { diverged.append("device \(worker) still holds \(extra), which left its scope") }
        }
        let edited = serverRecords.filter { record in
            let text = String(decoding: record.fields, as: UTF8.self)
            return text.contains("-note\"") || text.contains("-recipient\"")
        }.count
        print("\nInvariants:")
        print("  every captured submission is on the server:  \(missing.isEmpty ? "yes" : "NO, \(missing.count) missing")")
        print("  duplicates found on the server:              \(duplicates.count)")
        print("  documents applied more than once:            \(appliedTwice.count)")
        print("  placeholders left in server records:         \(unresolved.count)")
        print("  files on the server:                         \(server.fileIDs().count) of \(photos)")
        let storedOrders = documents.filter { $0.form == "SalesOrder" }
        // Forms that think: each order's total is its lines' (calculated on the device, checked
        // by the server); a passed inspection holds no failure reason, a failed one holds one.
        let objects = { (form: String) in
            documents.filter { $0.form == form }.compactMap { try? JSONSerialization.jsonObject(with: $0.payload) as? [String: Any] }
        }
        let minorUnits = { (value: Any?) in ((value as? [String: Any])?["minor_units"] as? NSNumber)?.int64Value }
        let totalsRight = objects("SalesOrder").filter { order in
            let lines = (order["lines"] as? [[String: Any]]) ?? []
            let sum = lines.reduce(Int64(0)) { $0 + Int64(($1["quantity"] as? Int) ?? 0) * (minorUnits($1["unit_price"]) ?? 0) }
            return minorUnits(order["total"]) == sum
        }.count
        let inspections = objects("SiteInspection")
        let reasonsRight = inspections.filter { ($0["passed"] as? Bool == true) == ($0["failure_reason"] == nil) }.count
        print("  order totals equal to their lines:           \(totalsRight) of \(storedOrders.count)")
        print("  failure reasons only on failed inspections:  \(reasonsRight) of \(inspections.count)")
        // Several records from one visit: every finding of every inspection is a Finding record,
        // once, with its inspection's site.
        let findingRecords = serverRecords.filter { $0.type == "Finding" }.compactMap {
            try? RecordProjection.decode(Finding.self, fields: $0.fields, id: $0.id, version: $0.version)
        }
        let findingsCaptured = inspections.flatMap { inspection in
            ((inspection["findings"] as? [[String: Any]]) ?? []).map {
                "\(inspection["site_code"] as? String ?? "") \($0["title"] as? String ?? "")"
            }
        }
        let findingsMade = findingRecords.map { "\($0.siteCode ?? "") \($0.title ?? "")" }
        let findingsRight = findingsMade.sorted() == findingsCaptured.sorted()
        print(
            "  inspection findings made as records:         \(findingsRight ? "\(findingsMade.count) of \(findingsCaptured.count), each once with its site" : "NO: \(findingsMade.count) records for \(findingsCaptured.count) findings")"
        )
        let closedOffline = findingRecords.filter { $0.title?.hasPrefix("Loose cover") == true }
        let closedRight = closedOffline.count == inspections.count && closedOffline.allSatisfy { $0.status == .fixed && $0.version == 2 }
        print(
            "  findings closed offline, before they landed: \(closedOffline.filter { $0.status == .fixed }.count) of \(inspections.count) fixed on the server (version 2)"
        )
        // A crew's own subset: each device holds its region's jobs (checked above with the rest of
        // its records), and the job it finished offline is done on the server.
        let jobs = serverRecords.filter { $0.type == "Job" }.compactMap {
            try? RecordProjection.decode(Job.self, fields: $0.fields, id: $0.id, version: $0.version)
        }
        let jobsDone = jobs.filter { $0.status == .done && $0.version == 2 && $0.note?.hasSuffix("-job") == true }.count
        let regions = Set((1...workers).map { FieldWork.region($0) })
        let jobsRight =
            jobsDone == regions.count
            && jobsHeld == (1...workers).reduce(0) { n, w in n + jobs.filter { $0.region == FieldWork.region(w) }.count }
        print(
            "  jobs by region subscription:                 \(jobsHeld) held on \(workers) devices, each its own region's (\(jobs.count) planned in 4 regions); \(jobsDone) of \(regions.count) regions' first job done offline (version 2)"
        )
        let draftRight = try await draftLanded(server, sentBack: office.sentBack)
        print(
            "  a form killed mid-way, resumed from its draft: \(draftRight ? "landed once, its 2 photos byte for byte, no draft left" : "NO")"
        )
        let (built, next) = (SalesOrder.formVersion, AppUpdate.nextVersion)
        let storedV2 = storedOrders.filter { $0.formVersion == next }.count
        print(
            "  orders upgraded on updated devices:          \(ordersUpgraded) of \(ordersOnUpdated) (version \(built) → \(next), sent as version \(next))"
        )
        print(
            "  orders sent as version \(built) by the old build:   \(ordersOldBuildStayedV1) of \(ordersOnOldBuild) (upgraded by the server)"
        )
        print("  orders stored as version \(next) on the server:    \(storedV2) of \(storedOrders.count)")
        print("  device edits on the server's records:        \(edited) of \(2 * workers) delivery edits")
        print(
            "  device stores equal the server's scope:      \(diverged.isEmpty ? "yes (\(recordsHeld) records on \(workers) devices)" : "NO, \(diverged.count) differences")"
        )
        for line in diverged.prefix(10) { print("    " + line) }
        // Deliveries: how long after the sync began each reached the server, and its photos.
        let deliveries = captured.filter { $0.form == "DeliveryConfirmation" }
        print("\nDeliveries (seconds after the devices began to sync\(bandwidth > 0 ? ", on a \(bandwidth / 1000) KB/s uplink" : "")):")
        for entry in deliveries {
            let delivered = deliveredAfter[entry.documentID].map { String(format: "%6.2f s", $0) } ?? "   never"
            let photoTime = photosAfter[entry.documentID].map { String(format: "%6.2f s", $0) } ?? "   never"
            print(
                "  \(entry.marker.padding(toLength: 10, withPad: " ", startingAt: 0)) delivered on the server \(delivered), its photos \(photoTime)"
            )
        }
        let waits = deliveries.compactMap { entry in
            photosAfter[entry.documentID].flatMap { photos in deliveredAfter[entry.documentID].map { photos - $0 } }
        }
        if !waits.isEmpty {
            print(String(format: "  a delivery was on the server a median %.2f s before its photos", waits.sorted()[waits.count / 2]))
        }
        // The shared photo: one file on the server, named by every document that holds it.
        var sharedIDs: Set<Int64> = []
        for documentID in sharedPhotoHolders {
            guard let held = server.document(documentID) else { continue }
            if let delivery = try? JSONDecoder().decode(DeliveryConfirmation.self, from: held.payload), let last = delivery.proofPhotos.last
            {
                sharedIDs.insert(last.id)
            }
            if let inspection = try? JSONDecoder().decode(SiteInspection.self, from: held.payload),
                let first = inspection.findings.first?.photos.first
            {
                sharedIDs.insert(first.id)
            }
        }
        // (With fewer than 3 items a worker captures no inspection, and shares nothing.)
        let sharedOnce = items < 3 || (sharedIDs.count == workers && !sharedIDs.contains { $0 <= 0 })
        if items >= 3 {
            print(
                "  the damage photo, on a delivery and an inspection per worker: \(sharedOnce ? "stored and sent once per worker" : "NOT sent once (\(sharedIDs.sorted()))")"
            )
        }

        let lostHolds = lostPhone?.holds ?? false
        if let lost = lostPhone {
            print("\nThe phone reported lost (\(FieldDay.lostCourier)):")
            print("  delivered before it was lost:                \(lost.accepted.count), all on the server")
            print("  revoked (\(lost.revokedReason)); items sealed on it: \(lost.sealed) of \(lost.queued.count) it still held")
            print("  recovered from its support bundle:           \(lost.recovered.count) of \(lost.queued.count), sent from a new phone")
            print(
                "  its documents on the server:                 \(lost.onServer) of \(lost.accepted.count + lost.queued.count), \(lost.appliedTwice) applied twice"
            )
            print("  nothing the back office accepted was lost:   \(lostHolds ? "yes" : "NO")")
        }
        let hooks = office.deliveries(expected: office.exportEvents)
        let fixedRight =
            office.sentBack != nil && office.fixedVersion >= 2 && office.historyAuthors.last == "edited by courier-1"
            && office.historyAuthors.contains("reviewed by supervisor")
        let hooksRight = hooks.unique == hooks.expected && hooks.badSignatures == 0 && hooks.outOfOrder == 0
        print("\nThe back office:")
        print(
            "  webhook deliveries:                          \(hooks.unique) of \(hooks.expected) events, \(hooks.duplicates) repeated, \(hooks.badSignatures) badly signed, \(hooks.outOfOrder) documents out of order"
        )
        print(
            "  sent back and fixed:                         \(fixedRight ? "yes" : "NO"), version \(office.fixedVersion) (\(office.historyAuthors.joined(separator: ", ")))"
        )
        print(
            "  exported:                                    \(office.exportDocuments) documents in \(office.exportTables.count) CSV tables")
        print("\nParked items: \(parked.isEmpty ? "none" : "")")
        for line in parked { print("  " + line) }
        print("\nTimeline:")
        for line in timeline { print("  " + line) }
        let ok =
            missing.isEmpty && duplicates.isEmpty && appliedTwice.isEmpty && unresolved.isEmpty && parked.isEmpty && sharedOnce
            && server.fileIDs().count == photos && diverged.isEmpty && edited == 2 * workers
            && ordersUpgraded == ordersOnUpdated && ordersOldBuildStayedV1 == ordersOnOldBuild && storedV2 == storedOrders.count
            && totalsRight == storedOrders.count && reasonsRight == inspections.count && lostHolds && hooksRight && fixedRight
            && office.exportDocuments == documents.count && findingsRight && closedRight && jobsRight && draftRight
        if !ok {
            for worker in 1...workers {
                let lines = ((try? String(contentsOf: deviceLog(worker), encoding: .utf8)) ?? "").split(separator: "\n").suffix(15)
                print("\nThe end of device \(worker)'s log:")
                for line in lines { print("  " + line) }
            }
        }
        print("\n\(ok ? "OK: nothing lost, nothing applied twice, both directions converged." : "FAILED: an invariant did not hold.")")
        return ok ? 0 : 1
    }
}

/// Identities drawn from a seeded generator, formatted like UUIDs.
final class SeededIDs: Sendable {
    private let random: Mutex<SplitMix64>

    init(seed: UInt64) {
        random = Mutex(SplitMix64(state: seed))
    }

    func next() -> String {
        let (a, b) = random.withLock { ($0.next(), $0.next()) }
        let hex = String(format: "%016llx%016llx", a, b)
        let c = Array(hex)
        return [c[0..<8], c[8..<12], c[12..<16], c[16..<20], c[20..<32]].map { String($0) }.joined(separator: "-")
    }
}

/// The transport of a device with no signal at all (also what `outbox create` opens with, so
/// that looking never sends).
struct OfflineTransport: OutboxTransport {
    var workspace = "demo"

    func send(_ request: OutboundRequest) async -> DeliveryOutcome {
        .unreachable(reason: "no signal")
    }

    func probe() async -> Bool { false }
}
