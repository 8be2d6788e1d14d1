import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncProtocol
import FormSyncServer
import FormSyncTesting
import Foundation
import Testing

/// One phone, two couriers, a real server on 127.0.0.1: each enrols on the phone with their own
/// link, pulls their own round, and edits their own deliveries; each edit goes out under its
/// author's credential (the server takes an edit of a delivery only from the courier it is
/// assigned to), and each courier sees only their own records, kept while the other works.
struct SharedPhoneEndToEndTests {
    /// One phone on which Ana and Bo each enrolled with their own link and vault, its transport
    /// asking `people` for each request's person's token.
    static func sharedPhone(
        _ folder: URL, _ server: SyncServer, people: SharedPhoneCredentials = SharedPhoneCredentials()
    ) async throws
        -> Outbox
    {
        let report = DeviceReport(name: "Shift phone 3", appVersion: "2.5.0", specVersion: "corpus-1")
        for name in ["ana", "bo"] {
            let vault = FileCredentialVault(path: folder.appendingPathComponent("\(name).credentials").path)
            let credentials = try await DeviceCredentials(vault: vault, device: report)
            try await credentials.enrol(try DeviceEnrolmentTests.link(server, principal: name), installation: "shift-phone-3")
            #expect(try await people.add(credentials) == name)
        }
        let transport = HTTPTransport(workspace: "acme", baseURL: server.baseURL, timeout: .seconds(120)) { principal in
            await people.accessToken(for: principal)
        }
        return try Outbox(
            path: folder.appendingPathComponent("outbox.sqlite").path, forms: FormCatalog.forms, records: FormCatalog.records,
            transport: transport, refreshAuthentication: { await people.refresh() })
    }

    @Test func aSharedPhoneSendsEachPersonsItemsUnderThatPersonsCredentialAndShowsEachOnlyTheirRecords() async throws {
        let (folder, server) = try DeviceEnrolmentTests.world()
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }
        let outbox = try await Self.sharedPhone(folder, server)
        let anas = try server.putRecord(Delivery(courierId: "ana", status: .assigned, stopOrder: 1, address: "Rua 1"), workspace: "acme")
        let bos = try server.putRecord(Delivery(courierId: "bo", status: .assigned, stopOrder: 1, address: "Rua 2"), workspace: "acme")

        try await outbox.signIn("ana")
        _ = try await outbox.pull()
        #expect(try await outbox.records(Delivery.all).map(\.id) == [anas.id])
        try await outbox.edit(DeliveryUpdate.self, id: anas.id) { $0.notes = "gate code 4411" }

        try await outbox.signIn("bo")
        #expect(try await outbox.records(Delivery.all).isEmpty, "Ana's round is not Bo's")
        _ = try await outbox.pull()
        #expect(try await outbox.records(Delivery.all).map(\.id) == [bos.id])
        try await outbox.edit(DeliveryUpdate.self, id: bos.id) { $0.notes = "ring twice" }

        // Bo's flush sends Ana's edit too, under Ana's credential: under Bo's, the server would
        // refuse an edit of a delivery assigned to Ana.
        let sent = await outbox.flush()
        #expect(sent.sent == 2 && sent.rejected == 0 && sent.conflicts == 0, "\(sent)")
        func notes(_ id: Int64) throws -> String? {
            let record = try #require(server.record("Delivery", id: id, workspace: "acme"))
            return try JSONDecoder().decode(Delivery.self, from: record.fields).notes
        }
        #expect(try notes(anas.id) == "gate code 4411")
        #expect(try notes(bos.id) == "ring twice")

        // Back to Ana with the server gone: her round is on the phone as the server acknowledged
        // it, with nothing pulled again.
        server.stop()
        try await outbox.signIn("ana")
        let hers = try await outbox.records(Delivery.all)
        #expect(hers.map(\.id) == [anas.id])
        #expect(hers.first?.notes == "gate code 4411")
    }

    /// The same phone, Ana gone home with items that never left: they wait for her, nothing
    /// of hers goes out under Bo's credential, and Bo can take them over only by saying so.
    @Test func aSignedOutPersonsItemsWaitForThemUntilAPersonHandsThemOver() async throws {
        let (folder, server) = try DeviceEnrolmentTests.world()
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }
        let people = SharedPhoneCredentials()
        let outbox = try await Self.sharedPhone(folder, server, people: people)
        try await outbox.signIn("ana")
        let hers = try await outbox.enqueue(NewCustomer(name: "Kiosk on the quay", segment: .retail))
        try await outbox.signOut("ana")
        await people.remove("ana")
        try await outbox.signIn("bo")
        try await outbox.enqueue(NewCustomer(name: "Bakery", segment: .retail))
        #expect(await outbox.flush().sent == 1)
        #expect(server.documents().count == 1)
        #expect(try await outbox.itemsWaitingForTheirOwners().map(\.id) == [hers])

        try await outbox.handOver(hers, to: "bo")
        #expect(await outbox.flush().sent == 1)
        #expect(server.documents().count == 2)
        #expect(try await outbox.handovers(of: hers).map { "\($0.from ?? "-")→\($0.to) by \($0.by)" } == ["ana→bo by bo"])
    }
}
