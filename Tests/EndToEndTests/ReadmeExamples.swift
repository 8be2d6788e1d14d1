import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncProtocol
import FormSyncServer
import FormSyncTesting
import Foundation
import Testing

// Every Swift example of README.md, verbatim (ReadmeTests checks that README and this file
// agree), run against the reference server with what an app would have at hand.

/// What the README's examples assume an app has.
struct AppContext {
    let world: World
    let serverURL: URL
    let databasePath: String
    let vaultPath: String
    let scannedLink: EnrolmentLink
    let installationID = "install-van-12"
    let cameraURL: URL
    let signatureURL: URL
    let deliveryID: Int64

    init() throws {
        world = try World()
        serverURL = world.server.baseURL
        databasePath = world.directory.appendingPathComponent("app.sqlite").path
        vaultPath = world.directory.appendingPathComponent("credentials.json").path
        let enrolment = try world.server.makeEnrolment(principal: "courier-7", workspace: "acme")
        scannedLink = EnrolmentLink(server: serverURL.absoluteString, workspace: "acme", code: enrolment.code)
        cameraURL = world.directory.appendingPathComponent("photo.jpg")
        signatureURL = world.directory.appendingPathComponent("signature.png")
        try MediaSignature.stamped(Data(repeating: 0xD8, count: 30_000), asFileNamed: "photo.jpg").write(to: cameraURL)
        try MediaSignature.stamped(Data(repeating: 0x89, count: 4_000), asFileNamed: "signature.png").write(to: signatureURL)
        deliveryID = try world.server.putRecord(
            Delivery(courierId: "courier-7", status: .assigned, stopOrder: 1, address: "Rua 1"), workspace: "acme"
        ).id
    }
}

struct ReadmeExamples {
    @Test func theREADMEExamplesRunAgainstTheReferenceServer() async throws {
        let context = try AppContext()
        let (serverURL, databasePath) = (context.serverURL, context.databasePath)
        let (vaultPath, scannedLink, installationID) = (context.vaultPath, context.scannedLink, context.installationID)
        let (cameraURL, signatureURL, deliveryID) = (context.cameraURL, context.signatureURL, context.deliveryID)

        let credentials = try await DeviceCredentials(vault: FileCredentialVault(path: vaultPath), device: DeviceReport(name: "Van 12"))
        if await credentials.status == .notEnrolled { try await credentials.enrol(scannedLink, installation: installationID) }
        let transport = HTTPTransport(workspace: "acme", baseURL: serverURL) { await credentials.accessToken() }
        let outbox = try Outbox(
            path: databasePath, forms: FormCatalog.forms, records: FormCatalog.records, transport: transport,
            configuration: Outbox.Configuration(concurrency: 4, uploadConcurrency: 2),
            refreshAuthentication: { await credentials.refresh() })

        let (connectivity, hint) = AsyncStream.makeStream(of: Bool.self)
        let engine = SyncEngine(outbox: outbox)
        let sync = Task { await engine.run(connectivity: connectivity) }
        hint.yield(true)

        try await outbox.setNetworkCost(.expensive)  // the OS says: cellular
        let waitingForWiFi = await outbox.stateCounts()[.waitingForUnmeteredNetwork] ?? 0
        try await outbox.setNetworkCost(.unmetered)  // back on Wi-Fi: they go
        #expect(waitingForWiFi == 0)

        let photo = outbox.placeholderIDs.next()
        let signature = outbox.placeholderIDs.next()
        let delivery = DeliveryConfirmation(
            deliveryId: EntityRef(deliveryID), outcome: .delivered, deliveredAt: Timestamp(Date()), recipientName: "Ana Lima",
            proofPhotos: [FileRef(id: photo, contentType: "image/jpeg")], signature: FileRef(id: signature, contentType: "image/png"))
        let result = try await outbox.submit(
            delivery,
            attachments: [
                .init(placeholder: photo, source: cameraURL, contentType: "image/jpeg"),
                .init(placeholder: signature, source: signatureURL, contentType: "image/png"),
            ], timeout: .seconds(5))
        switch result {
        case .confirmed: print("saved and sent")
        case .queued(_, let state): print("saved on the device: \(state)")
        case .rejected(_, _, let errors):
            for error in errors { print(DeliveryConfirmation.Field(pointer: error.pointer) as Any, error.detail) }
        }

        let events = Task {
            for await event in outbox.events() {
                if case .attemptFinished(let item, let outcome, let status, let duration, _, _) = event {
                    print("item \(item): \(outcome.name) \(status.map(String.init) ?? "-") in \(duration)")
                }
            }
        }
        let counts = await outbox.stateCounts()
        for item in try await outbox.parkedItems() { print(item.id, item.state, item.lastError ?? "", item.fieldErrors) }
        engine.stop()
        let report = await engine.sync(for: .seconds(10))  // an iOS background task: both ways, bounded
        events.cancel()
        _ = (counts, report, sync)

        // Pull the round before leaving the depot (the engine also pulls by itself).
        let pulled = try await outbox.pull()  // pages until caught up: .upserted, .deleted, .caughtUp, .stoppedBecause

        // Read without the network. Unsent work shows on top of what was pulled.
        let records = outbox.recordStore  // the device's records (the outbox forwards these calls too)
        let todo = try await records.records(Delivery.byStatus(.assigned))
        let stop = try await records.record(Delivery.self, id: deliveryID)
        let notices = Task { for await changed in await records.recordChanges() { print(changed.changes["Delivery"] ?? []) } }

        // Edit a record: the form starts from the record as the device shows it; the record as last
        // pulled is the base and its version goes out as If-Match.
        try await outbox.edit(DeliveryUpdate.self, id: deliveryID) { $0.notes = "gate code 4411" }

        // Create one offline: it shows at once under a placeholder id, can be referenced and edited,
        // and is re-keyed to its server id when the create lands (references follow).
        let item = try await outbox.enqueue(NewCustomer(name: "Mercearia Nova", segment: .retail))
        let placeholder = try await outbox.item(item)!.producesPlaceholder!
        try await outbox.enqueue(
            SalesOrder(
                customerId: EntityRef(placeholder), orderDate: LocalDate("2026-11-30"),
                lines: [.init(sku: "AB-1234", quantity: 2, unitPrice: Money(minorUnits: 999, currency: "EUR"))]))
        try await outbox.edit(CustomerUpdate.self, id: placeholder) { $0.phone = "+351 930 000 000" }
        notices.cancel()
        _ = (pulled, todo, stop)
        // What the examples did, as the server sees it.
        let attempts = outbox.events()
        _ = await outbox.flush()
        let finished = await StreamReading.read(attempts, within: 10) { event in
            if case .attemptFinished = event { return true } else { return false }
        }
        #expect(finished.reached)
        let held = context.world.server.documents()
        #expect(held.contains { $0.form == "DeliveryConfirmation" })
        #expect(held.contains { $0.form == "NewCustomer" })
        #expect(held.contains { $0.form == "SalesOrder" })
        #expect(context.world.server.fileIDs().count == 2)
        let record = try #require(context.world.server.record("Delivery", id: deliveryID, workspace: "acme"))
        #expect(String(decoding: record.fields, as: UTF8.self).contains("gate code 4411"))
        #expect(await outbox.stateCounts()[.confirmed] == 7)
    }

    @Test func theSharedPhoneAndSupportExamplesRun() async throws {
        let context = try AppContext()
        let serverURL = context.serverURL
        let sharedPhonePath = context.world.directory.appendingPathComponent("shared.sqlite").path
        var enrolled: [DeviceCredentials] = []
        for name in ["ana", "bo"] {
            let made = try context.world.server.makeEnrolment(principal: name, workspace: "acme")
            let credentials = try await DeviceCredentials(
                vault: FileCredentialVault(path: context.world.directory.appendingPathComponent("\(name).vault").path),
                device: DeviceReport(name: "Shift phone 3"))
            try await credentials.enrol(
                EnrolmentLink(server: serverURL.absoluteString, workspace: "acme", code: made.code), installation: "shift-phone-3")
            enrolled.append(credentials)
        }
        let (anasCredentials, bosCredentials) = (enrolled[0], enrolled[1])

        let people = SharedPhoneCredentials()
        try await people.add(anasCredentials)  // each person enrolled on this phone with their own link and vault
        try await people.add(bosCredentials)
        let shared = HTTPTransport(workspace: "acme", baseURL: serverURL) { principal in await people.accessToken(for: principal) }
        let phone = try Outbox(
            path: sharedPhonePath, forms: FormCatalog.forms, records: FormCatalog.records, transport: shared,
            refreshAuthentication: { await people.refresh() })
        try await phone.signIn("ana")  // Ana captures, and sees her own records and items only
        try await phone.enqueue(NewCustomer(name: "Quay kiosk", segment: .retail))
        try await phone.signIn("bo")  // Bo takes over: Ana's items still go out, under Ana's credential
        try await phone.signOut("ana")  // Ana's credential leaves the phone: her unsent items wait for her
        for waiting in try await phone.itemsWaitingForTheirOwners() { try await phone.handOver(waiting.id, to: "bo") }

        let bundle = try await phone.supportBundle()  // counts, items with reasons and attempts; no token, no payload
        if case .done(let receipt) = await phone.sendSupportBundle() { print("support has bundle \(receipt.id)") }
        // (end of the examples)
        #expect(bundle.items.map(\.principal) == ["bo"] && bundle.items.allSatisfy { $0.payload == nil })
        #expect(await phone.flush().sent == 1)
        #expect(context.world.server.documents().map(\.form) == ["NewCustomer"])
    }

    @Test func theREADMEChildProcessExampleRunsTheTool() async throws {
        let formsyncPath = DemoProcessTests.formsync.path
        let packageRoot = ReadmeTests.root.path
        let run = try await ChildProcess.run(formsyncPath, ["check", "FormSpecs"], directory: packageRoot)
        #expect(run.termination == .exit(0), "\(run.errors)")
    }

    @Test func theFormsThatThinkExampleRuns() async throws {
        let world = try World()
        let outbox = try world.device()
        // docs/SpecLanguage.md, "Forms that think"
        var inspection = SiteInspection(
            siteCode: "LIS-0042", inspectorId: EntityRef(7), visitDate: LocalDate("2026-11-30"),
            location: GeoPoint(latitude: 38.7, longitude: -9.1), hazards: [.gas])
        inspection.passed = true
        inspection.failureReason = "typed before the site passed"
        let showReason = inspection.isRelevant(.failureReason)  // false: the form hides it
        let queued = inspection.recalculated()  // failureReason is nil: it does not apply
        try await outbox.enqueue(inspection)  // the outbox queues the recalculated payload

        var customer = NewCustomer(name: "Casa Ana", segment: .retail, region: .south)
        let districts = customer.offeredOptions(for: .district)  // ["vineyards", "coast"]
        customer.district = .harbour
        let errors = customer.validate()  // #/district not_offered: the north's district
        // (end of the example)
        #expect(!showReason)
        #expect(queued.failureReason == nil)
        #expect(districts == ["vineyards", "coast"])
        #expect(errors.map { "\($0.pointer) \($0.code)" } == ["#/district not_offered"])
        _ = try await world.drain()
        let stored = try #require(world.server.documents().first)
        #expect(try JSONDecoder().decode(SiteInspection.self, from: stored.payload).failureReason == nil)
    }

    @Test func theSubscriptionExampleRuns() async throws {
        let world = try World()
        let north = try world.server.putRecord(SubscriptionTests.job(.north, "2026-12-20", "north later"), workspace: "acme")
        let south = try world.server.putRecord(SubscriptionTests.job(.south, "2026-12-07", "south today"), workspace: "acme")
        _ = try world.server.putRecord(SubscriptionTests.job(.south, "2026-12-08", "south tomorrow"), workspace: "acme")
        let outbox = try world.device()
        // docs/Records.md, "Subscriptions"
        // A technician's phone: the north crew's jobs for a week, and today's jobs of every region
        // first, for a day; the engine's pulls keep both current.
        try await outbox.subscribe(
            RecordSubscription(
                "north crew", of: Job.self, where: [.oneOf("region", ["north"])], for: .seconds(7 * 86_400)))
        try await outbox.subscribe(
            RecordSubscription(
                "today", of: Job.self, where: [.between("due_on", from: LocalDate("2026-12-07"), to: LocalDate("2026-12-07"))],
                for: .seconds(86_400), priority: 1))
        _ = try await outbox.pull()
        let held = try await outbox.subscriptions()  // name, type, priority, expiresAt, records
        try await outbox.unsubscribe("north crew")  // its jobs leave, but one a queued JobUpdate edits
        _ = held
        // (end of the example)
        #expect(held.map(\.name) == ["today", "north crew"] && held.map(\.records) == [1, 1])
        #expect(try await outbox.records(Job.all).map(\.id) == [south.id])
        _ = north
    }
}

/// docs/PROTOCOL.md's webhook signature checks, in Swift (verbatim) and in Python (taken from
/// the page and run): both accept what the server signs and refuse a body changed by a byte.
struct WebhookSignatureExamples {
    @Test func theProtocolsSignatureChecksInSwiftAndPythonAcceptWhatTheServerSigns() async throws {
        let body = Data(#"{"document_id":"d-1","event":"accepted","event_id":7}"#.utf8)
        let secret = "whsec_conformance-example"
        let signatureHeader = WebhookSignature.header(body: body, timestamp: Int64(Date().timeIntervalSince1970), secrets: [secret])

        let trusted = WebhookSignature.verify(
            header: signatureHeader, body: body, secret: secret, now: Int64(Date().timeIntervalSince1970))
        #expect(trusted)

        let page = try String(contentsOf: CommandLineTests.root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
        let start = try #require(page.range(of: "```python\n"))
        let end = try #require(page.range(of: "```", range: start.upperBound..<page.endIndex))
        let function = String(page[start.upperBound..<end.lowerBound])
        let program =
            function + """

                sys = __import__("sys")
                header, secret = sys.argv[1], sys.argv[2]
                body = open(sys.argv[3], "rb").read()
                print(verify(header, body, secret), verify(header, body + b" ", secret), verify(header, body, secret + "x"))
                """
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("signed-\(UUID().uuidString).json")
        try body.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await ExportTests.python(["-c", program, signatureHeader, secret, file.path])
        #expect(
            run.status == 0 && run.output.trimmingCharacters(in: .whitespacesAndNewlines) == "True False False",
            "\(run.output)\(run.errors)")
    }
}
