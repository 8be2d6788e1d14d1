import FieldForms
import FormSyncClient
import FormSyncCommandLine
import FormSyncModel
import FormSyncProtocol
import FormSyncServer
import Foundation

/// The phone reported lost mid-day in `formsync demo`: what it had delivered before, what it
/// held when it was revoked, and what support recovered from its bundle onto the courier's new
/// phone.
struct LostPhone {
    /// The documents it delivered before it was lost, and those it still held.
    var accepted: [String] = []
    var queued: [String] = []
    /// The items it sealed when the server told it it was revoked.
    var sealed = 0
    /// The items read back (payload included) from its support bundle and sent from the new phone.
    var recovered: [String] = []
    var revokedReason = ""
    /// Documents of the phone on the server, and how many were applied more than once.
    var onServer = 0
    var appliedTwice = 0

    /// Nothing the back office accepted was lost, the queued work came back, nothing twice.
    var holds: Bool {
        sealed == queued.count && Set(recovered) == Set(queued) && onServer == accepted.count + queued.count && appliedTwice == 0
    }
}

extension FieldDay {
    static let lostCourier = "courier-x"

    /// What a demo device says of itself.
    static func report(_ worker: Int) -> DeviceReport {
        DeviceReport(name: "Demo phone \(worker)", appVersion: "demo", specVersion: "corpus")
    }

    /// Enrols the device whose vault is `vault` for `principal` with a code the back office made,
    /// read back from its link as a device scanning the QR code would; the device's id.
    func enrol(_ vault: URL, principal: String, server: SyncServer, name: String? = nil) async throws -> String {
        let made = try server.makeEnrolment(principal: principal, workspace: "demo")
        let text = EnrolmentLink(server: server.baseURL.absoluteString, workspace: "demo", code: made.code).description
        guard let link = EnrolmentLink(parsing: text) else { throw UsageError("the enrolment link does not read back: \(text)") }
        let credentials = try await DeviceCredentials(
            vault: FileCredentialVault(path: vault.path), device: DeviceReport(name: name ?? "Demo phone of \(principal)"))
        return try await credentials.enrol(link, installation: "demo-\(UUID().uuidString.prefix(8))").deviceID
    }

    /// Courier X's phone: it delivers two new customers, captures three more offline, and is
    /// reported lost. The back office revokes it; when it next reaches the server it is told so,
    /// seals what it had not sent and stops. Support reads its sealed work from its support
    /// bundle and the courier sends it again from a new phone, under the same document ids.
    mutating func loseAPhone(_ server: SyncServer) async throws -> LostPhone {
        var lost = LostPhone()
        let phone = folder.appendingPathComponent("lost-phone.sqlite")
        let phoneVault = folder.appendingPathComponent("lost-phone.credentials")
        let deviceID = try await enrol(phoneVault, principal: Self.lostCourier, server: server)
        let credentials = try await DeviceCredentials(vault: FileCredentialVault(path: phoneVault.path), device: Self.report(0))
        let transport = HTTPTransport(workspace: "demo", baseURL: server.baseURL, timeout: .seconds(5)) {
            await credentials.accessToken()
        }
        let outbox = try Outbox(
            path: phone.path, forms: FormCatalog.forms, records: FormCatalog.records, transport: transport,
            refreshAuthentication: { await credentials.refresh() })
        await credentials.onRevocation { reason in _ = try? await outbox.deviceRevoked(reason: reason, purge: .all) }
        for n in 1...5 {
            let documentID = "lost-phone-\(n)"
            try await outbox.enqueue(NewCustomer(name: "Kiosk \(n) of \(Self.lostCourier)", segment: .retail), documentID: documentID)
            if n <= 2 {
                lost.accepted.append(documentID)
                if n == 2 { _ = await outbox.flush() }
            } else {
                lost.queued.append(documentID)
            }
        }
        note("\(Self.lostCourier)'s phone delivered \(lost.accepted.count) documents, then captured \(lost.queued.count) more offline")
        lost.revokedReason = "reported lost by \(Self.lostCourier)"
        let revoked = try server.revokeDevice(deviceID, workspace: "demo", reason: lost.revokedReason) ?? []
        note("\(Self.lostCourier) reports the phone lost: the back office revokes \(revoked.joined(separator: ", "))")
        // Whoever holds it now turns it on: its engine is told it is revoked, and stops.
        await SyncEngine(outbox: outbox).run()
        lost.sealed = try await outbox.items(in: [.sealed]).count
        note("the lost phone was told it is revoked: \(lost.sealed) items sealed on it, nothing more sent")

        // Support reads the phone's file (given back, or its last backup): the bundle holds the sealed work.
        let bundle = try OutboxInspector(path: phone.path).supportBundle(includePayloads: true)
        let newVault = folder.appendingPathComponent("new-phone.credentials")
        _ = try await enrol(newVault, principal: Self.lostCourier, server: server, name: "New phone of \(Self.lostCourier)")
        let newCredentials = try await DeviceCredentials(vault: FileCredentialVault(path: newVault.path), device: Self.report(0))
        let newPhone = try Outbox(
            path: folder.appendingPathComponent("new-phone.sqlite").path, forms: FormCatalog.forms, records: FormCatalog.records,
            transport: HTTPTransport(workspace: "demo", baseURL: server.baseURL, timeout: .seconds(5)) {
                await newCredentials.accessToken()
            },
            refreshAuthentication: { await newCredentials.refresh() })
        for item in bundle.items where item.state == SyncState.sealed.rawValue && item.form == NewCustomer.formName {
            guard let payload = item.payload, let customer = try? JSONDecoder().decode(NewCustomer.self, from: Data(payload.utf8)) else {
                continue
            }
            try await newPhone.enqueue(customer, documentID: item.documentID)
            lost.recovered.append(item.documentID)
        }
        _ = await newPhone.flush()
        let held = (lost.accepted + lost.queued).compactMap { server.document($0) }
        lost.onServer = held.count
        lost.appliedTwice = held.filter { $0.appliedWrites != 1 }.count
        note(
            "support recovered \(lost.recovered.count) sealed items from the lost phone's bundle; the courier's new phone sent them")
        return lost
    }
}
