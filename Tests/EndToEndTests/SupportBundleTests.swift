import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncProtocol
import FormSyncServer
import FormSyncTesting
import Foundation
import Testing

/// Remote diagnostics over real HTTP: the back office asks one device for its support bundle,
/// the request reaches the device in its next pull, the device answers it in that sync, and the
/// back office reads counts, reasons and attempts, never a token and, unless the app opted in,
/// never a payload.
struct SupportBundleTests {
    struct Device {
        let credentials: DeviceCredentials
        let enrolled: Credentials
        let outbox: Outbox
    }

    static func device(_ name: String, _ folder: URL, _ server: SyncServer, payloads: Bool = false) async throws -> Device {
        let report = DeviceReport(name: "Van of \(name)", appVersion: "2.5.0", specVersion: "corpus-1")
        let credentials = try await DeviceCredentials(
            vault: FileCredentialVault(path: folder.appendingPathComponent("\(name).credentials").path), device: report)
        let enrolled = try await credentials.enrol(
            try DeviceEnrolmentTests.link(server, principal: name), installation: "install-\(name)-0001")
        var configuration = Outbox.Configuration()
        configuration.supportDevice = report
        configuration.supportBundlePayloads = payloads
        let transport = HTTPTransport(workspace: "acme", baseURL: server.baseURL, timeout: .seconds(120)) {
            await credentials.accessToken()
        }
        let outbox = try Outbox(
            path: folder.appendingPathComponent("\(name).sqlite").path, forms: FormCatalog.forms, records: FormCatalog.records,
            transport: transport, configuration: configuration, refreshAuthentication: { await credentials.refresh() })
        return Device(credentials: credentials, enrolled: enrolled, outbox: outbox)
    }

    @Test func aBackOfficeRequestReachesTheDeviceInItsNextPullAndIsAnsweredInThatSync() async throws {
        let (folder, server) = try DeviceEnrolmentTests.world()
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }
        let ana = try await Self.device("ana", folder, server)
        try await ana.outbox.enqueue(NewCustomer(name: "Harbour café", segment: .retail))
        #expect(await ana.outbox.flush().sent == 1)
        try await ana.outbox.enqueue(NewCustomer(name: "Not sent yet", segment: .retail))

        let office = HTTPTransport(workspace: "acme", baseURL: server.baseURL) {
            try? server.issueAccessToken(principal: "office", workspaces: ["acme"], role: .backOffice)
        }
        guard
            case .done(let asked) = await office.requestSupportBundle(
                SupportRequestCreate(deviceID: ana.enrolled.deviceID, reason: "stuck"))
        else {
            Issue.record("the back office could not ask")
            return
        }
        #expect(asked.answeredAt == nil)
        guard case .done(let before) = await office.supportBundles(device: ana.enrolled.deviceID) else {
            Issue.record("no list")
            return
        }
        #expect(before.bundles.isEmpty, "nothing is sent before the device pulls")

        let events = ana.outbox.events()
        _ = try await ana.outbox.pull()
        var seen: [SyncEvent] = []
        for await event in events {
            seen.append(event)
            if case .supportBundleSent = event { break }
        }
        #expect(seen.suffix(2) == [.pulled(upserted: 1, deleted: 0, caughtUp: true), .supportBundleSent(request: asked.id)], "\(seen)")

        guard case .done(let after) = await office.supportBundles(device: ana.enrolled.deviceID) else {
            Issue.record("no list")
            return
        }
        let received = try #require(after.bundles.first)
        #expect(after.bundles.count == 1)
        #expect(received.bundle.answering == asked.id && received.principal == "ana")
        #expect(received.bundle.device?.appVersion == "2.5.0")
        #expect(received.bundle.counts == ["confirmed": 1, "saved_on_device": 1])
        #expect(received.bundle.items.map(\.state) == ["confirmed", "saved_on_device"])
        #expect(received.bundle.items.first?.history.first?.status == 201)
        #expect(received.bundle.items.allSatisfy { $0.payload == nil }, "no payload unless the app opts in")
        let raw = try JSONEncoder().encode(received)
        let vault = try #require(try FileCredentialVault(path: folder.appendingPathComponent("ana.credentials").path).load())
        for secret in [vault.refreshToken, await ana.credentials.accessToken() ?? "-"] {
            #expect(raw.range(of: Data(secret.utf8)) == nil, "a token reached the bundle")
        }

        // Answered: the next pull carries no request, and nothing more is sent.
        _ = try await ana.outbox.pull()
        guard case .done(let later) = await office.supportBundles(device: ana.enrolled.deviceID) else {
            Issue.record("no list")
            return
        }
        #expect(later.bundles.count == 1)
    }

    @Test func aDeviceAnswersOnlyItsOwnRequestAndAnAppThatOptsInSendsPayloads() async throws {
        let (folder, server) = try DeviceEnrolmentTests.world()
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }
        let ana = try await Self.device("ana", folder, server)
        let bo = try await Self.device("bo", folder, server, payloads: true)
        let office = HTTPTransport(workspace: "acme", baseURL: server.baseURL) {
            try? server.issueAccessToken(principal: "office", workspaces: ["acme"], role: .backOffice)
        }
        guard case .done(let asked) = await office.requestSupportBundle(SupportRequestCreate(deviceID: ana.enrolled.deviceID)) else {
            Issue.record("the back office could not ask")
            return
        }
        _ = try await bo.outbox.pull()  // Bo's device is not asked
        guard case .refused(let code, _) = await bo.outbox.sendSupportBundle(answering: asked.id) else {
            Issue.record("Bo's device answered Ana's request")
            return
        }
        #expect(code == .noSuchSupportRequest)

        // Unasked, Bo's app (which opted in) sends one with its payloads.
        try await bo.outbox.enqueue(NewCustomer(name: "Quay kiosk", segment: .retail))
        guard case .done = await bo.outbox.sendSupportBundle() else {
            Issue.record("Bo's bundle was refused")
            return
        }
        guard case .done(let list) = await office.supportBundles(device: bo.enrolled.deviceID) else {
            Issue.record("no list")
            return
        }
        #expect(list.bundles.first?.bundle.items.first?.payload?.contains("Quay kiosk") == true)
        #expect(list.bundles.first?.bundle.answering == nil)

        // A device's own token cannot ask for or read bundles; an unknown device cannot be asked.
        let asDevice = HTTPTransport(workspace: "acme", baseURL: server.baseURL) { ana.enrolled.accessToken }
        guard case .refused(let refusal, _) = await asDevice.supportBundles() else {
            Issue.record("a device read the bundles")
            return
        }
        #expect(refusal == .backOfficeOnly)
        guard case .refused(let unknown, _) = await office.requestSupportBundle(SupportRequestCreate(deviceID: "no-such-device-1")) else {
            Issue.record("an unknown device was asked")
            return
        }
        #expect(unknown == .noSuchDevice)
    }
}
