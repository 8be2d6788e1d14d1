import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Records both ways over real HTTP and SQLite: the back office writes records on the reference
/// server, devices pull their scope into their outbox database, read it locally, and change it
/// through forms that create or edit records.
struct TwoWaySyncTests {
    /// The device's copy of every record of `type`, as (id, version, fields), for comparing with the server.
    static func stored<R: SyncRecord>(_ type: R.Type, in outbox: Outbox) async throws -> [Int64: (Int, R)] {
        Dictionary(uniqueKeysWithValues: try await outbox.records(R.all).map { ($0.id, ($0.version, $0)) })
    }

    /// The server's records of `type` that a device of `principal` receives, typed.
    static func serverScope<R: SyncRecord>(_ type: R.Type, _ world: World, principal: String) throws -> [Int64: (Int, R)] {
        var result: [Int64: (Int, R)] = [:]
        for record in world.server.records(workspace: "acme")
        where record.type == R.recordType && (record.scope.isEmpty || record.scope == principal) {
            result[record.id] = (
                record.version, try RecordProjection.decode(R.self, fields: record.fields, id: record.id, version: record.version)
            )
        }
        return result
    }

    static func expectConverged<R: SyncRecord>(_ type: R.Type, _ outbox: Outbox, _ world: World, principal: String) async throws {
        let device = try await stored(type, in: outbox)
        let server = try serverScope(type, world, principal: principal)
        #expect(device.keys.sorted() == server.keys.sorted(), "\(R.recordType): device and server hold different records")
        for (id, (version, record)) in server {
            #expect(
                device[id]?.0 == version, "\(R.recordType) \(id): version \(device[id]?.0 ?? -1) on the device, \(version) on the server")
            #expect(device[id]?.1 == record, "\(R.recordType) \(id) differs")
        }
    }

    @Test func aDevicePullsItsScopeAndNotAnotherCouriersDeliveries() async throws {
        let world = try World()
        var ada: [Delivery] = []
        for n in 1...3 {
            ada.append(
                try world.server.putRecord(
                    Delivery(courierId: "ada", status: .assigned, stopOrder: n, address: "Rua \(n)"), workspace: "acme"))
        }
        let bobs = try world.server.putRecord(
            Delivery(courierId: "bob", status: .assigned, stopOrder: 1, address: "Avenida 1"), workspace: "acme")
        let shop = try world.server.putRecord(Customer(name: "Shop", segment: .retail), workspace: "acme")
        _ = try world.server.putRecord(Customer(name: "Elsewhere", segment: .retail), workspace: "globex")

        let outbox = try world.device("ada", principal: "ada")
        let report = try await outbox.pull()
        #expect(report.caughtUp)
        #expect(report.upserted == 4)
        #expect(try await outbox.records(Delivery.all).map(\.id) == ada.map(\.id))
        #expect(try await outbox.records(Delivery.byStopOrder(2)).map(\.address) == ["Rua 2"])
        #expect(try await outbox.records(Delivery.byStatus(.assigned)).count == 3)
        #expect(try await outbox.record(Delivery.self, id: bobs.id) == nil)
        #expect(try await outbox.records(Customer.all).map(\.name) == ["Shop"])
        #expect(try await outbox.record(Customer.self, id: shop.id)?.version == 1)

        // Pulling again brings nothing new; the back office then reassigns one delivery each
        // way and deletes one: the device gains Bob's, loses the one given to Bob and the deleted.
        #expect(try await outbox.pull().upserted == 0)
        var moved = bobs
        moved.courierId = "ada"
        _ = try world.server.putRecord(moved, workspace: "acme")
        var given = ada[0]
        given.courierId = "bob"
        _ = try world.server.putRecord(given, workspace: "acme")
        try world.server.deleteRecord("Delivery", id: ada[1].id, workspace: "acme")
        let delta = try await outbox.pull()
        #expect(delta.upserted == 1)
        #expect(delta.deleted == 2)
        #expect(Set(try await outbox.records(Delivery.all).map(\.id)) == [bobs.id, ada[2].id])
        #expect(try await outbox.records(Delivery.byStopOrder(1)).map(\.id) == [bobs.id])
        try await Self.expectConverged(Delivery.self, outbox, world, principal: "ada")
        try await Self.expectConverged(Customer.self, outbox, world, principal: "ada")

        // Bob's device sees the delivery that moved to him, and nothing of Ada's.
        let bob = try world.device("bob", principal: "bob")
        _ = try await bob.pull()
        #expect(try await bob.records(Delivery.all).map(\.id) == [given.id])
    }

    @Test func backOfficeAndDeviceEditsMadeWhileOfflineConvergeByThePolicies() async throws {
        let world = try World()
        let c1 = try world.server.putRecord(
            Customer(name: "Padaria Lopes", email: "old@lopes.pt", phone: "+351 210 000 001", segment: .retail), workspace: "acme")
        let c2 = try world.server.putRecord(
            Customer(name: "Café Central", segment: .horeca, creditLimit: Money(minorUnits: 50_000, currency: "EUR")), workspace: "acme")
        let d1 = try world.server.putRecord(
            Delivery(courierId: "ada", status: .assigned, stopOrder: 1, address: "Rua 1", notes: "ring twice"), workspace: "acme")
        let d2 = try world.server.putRecord(
            Delivery(courierId: "ada", status: .assigned, stopOrder: 2, address: "Rua 2"), workspace: "acme")
        let d3 = try world.server.putRecord(
            Delivery(courierId: "ada", status: .assigned, stopOrder: 3, address: "Rua 3"), workspace: "acme")
        let outbox = try world.device("ada", principal: "ada")
        _ = try await outbox.pull()

        // Out of coverage: the device edits...
        try await outbox.edit(CustomerUpdate.self, id: c1.id) {
            $0.phone = "+351 910 000 111"  // conflict: client — the device's value wins
            $0.tradeName = "Lopes & Filhos"  // merge — nobody else touched it
        }
        // the server owns it
        try await outbox.edit(CustomerUpdate.self, id: c2.id) { $0.creditLimit = Money(minorUnits: 90_000, currency: "EUR") }
        try await outbox.edit(DeliveryUpdate.self, id: d1.id) { $0.notes = "gate code 4411" }  // conflict: ask
        try await outbox.edit(DeliveryUpdate.self, id: d2.id) { $0.recipient = "Sra. Costa" }
        try await outbox.edit(DeliveryUpdate.self, id: d3.id) { $0.recipient = "Sr. Dias" }
        // ...and shows its edits at once, before anything is sent.
        #expect(try await outbox.record(Customer.self, id: c1.id)?.phone == "+351 910 000 111")
        #expect(try await outbox.record(Delivery.self, id: d1.id)?.notes == "gate code 4411")

        // ...while the back office changes the same records.
        var office1 = c1
        office1.phone = "+351 210 999 999"
        office1.email = "new@lopes.pt"
        _ = try world.server.putRecord(office1, workspace: "acme")
        var office2 = c2
        office2.creditLimit = Money(minorUnits: 20_000, currency: "EUR")
        _ = try world.server.putRecord(office2, workspace: "acme")
        var officeD1 = d1
        officeD1.notes = "leave with the neighbour"
        _ = try world.server.putRecord(officeD1, workspace: "acme")
        var officeD2 = d2
        officeD2.address = "Rua 2, 3º esq."
        _ = try world.server.putRecord(officeD2, workspace: "acme")
        try world.server.deleteRecord("Delivery", id: d3.id, workspace: "acme")

        // Back in coverage: push, then pull.
        let report = try await world.drain("ada", principal: "ada", rounds: 3)
        _ = try await outbox.pull()
        #expect(report.sent == 2)  // c1 and d2 merged cleanly
        #expect(report.conflicts == 2)  // c2 (money the server owns), d1 (ask)
        #expect(report.rejected == 1)  // d3 was deleted

        let server1 = try #require(world.server.record("Customer", id: c1.id, workspace: "acme"))
        let landed = try RecordProjection.decode(Customer.self, fields: server1.fields, id: c1.id, version: server1.version)
        #expect(landed.phone == "+351 910 000 111")
        #expect(landed.tradeName == "Lopes & Filhos")
        #expect(landed.email == "new@lopes.pt")
        let server2 = try #require(world.server.record("Delivery", id: d2.id, workspace: "acme"))
        let d2Landed = try RecordProjection.decode(Delivery.self, fields: server2.fields, id: d2.id, version: server2.version)
        #expect(d2Landed.address == "Rua 2, 3º esq.")
        #expect(d2Landed.recipient == "Sra. Costa")

        // Nothing lost: the edits that need a person are parked with both sides.
        let parked = try await outbox.items(in: [.conflict, .rejected])
        #expect(parked.count == 3)
        let creditConflict = try #require(parked.first { $0.form == "CustomerUpdate" })
        #expect(creditConflict.conflicts.map(\.pointer) == ["#/credit_limit"])
        #expect(
            world.server.record("Customer", id: c2.id, workspace: "acme").map { String(decoding: $0.fields, as: UTF8.self) }?.contains(
                "20000") == true)
        let notesConflict = try #require(parked.first { $0.form == "DeliveryUpdate" && $0.state == .conflict })
        #expect(notesConflict.conflicts.map(\.pointer) == ["#/notes"])
        #expect(
            parked.contains {
                $0.state == .rejected && $0.lastError?.contains("no-such-record") == true
                    || $0.lastError?.contains("does not exist") == true
            })

        // The device's store equals the server's scope, and the unsent edits still show on top.
        let storedC1 = try await outbox.records(Customer.all).first { $0.id == c1.id }
        #expect(storedC1?.phone == "+351 910 000 111")
        // the parked edit, shown
        #expect(try await outbox.record(Customer.self, id: c2.id)?.creditLimit == Money(minorUnits: 90_000, currency: "EUR"))
        #expect(try await outbox.record(Delivery.self, id: d3.id) == nil)  // deleted on the server: gone from the device

        // The person settles the notes conflict with the server's version; then everything agrees.
        try await outbox.discard(creditConflict.id)
        for item in parked where item.state == .rejected { try await outbox.discard(item.id) }
        let serverNotes = try #require(notesConflict.serverPayload)
        var resolved = try JSONDecoder().decode(DeliveryUpdate.self, from: serverNotes)
        resolved.notes = "gate code 4411; leave with the neighbour"
        try await outbox.resolveConflict(notesConflict.id, with: resolved)
        _ = try await world.drain("ada", principal: "ada", rounds: 2)
        _ = try await outbox.pull()
        try await Self.expectConverged(Customer.self, outbox, world, principal: "ada")
        try await Self.expectConverged(Delivery.self, outbox, world, principal: "ada")
        #expect(try await outbox.record(Delivery.self, id: d1.id)?.notes == "gate code 4411; leave with the neighbour")
        #expect(try await outbox.record(Customer.self, id: c2.id)?.creditLimit == Money(minorUnits: 20_000, currency: "EUR"))
    }

    @Test func aRecordCreatedOfflineIsReferencedEditedAndLandsUnderItsServerID() async throws {
        let world = try World()
        let outbox = try world.device("rep")
        let changes = await outbox.recordChanges()
        var iterator = changes.makeAsyncIterator()

        // Offline: a new customer, an order for it, and a correction to it before it lands.
        let itemID = try await outbox.enqueue(NewCustomer(name: "Mercearia Nova", segment: .retail, acceptsCash: true))
        let placeholder = try #require(try await outbox.item(itemID)?.producesPlaceholder)
        #expect(placeholder < 0)
        #expect(await iterator.next()?.changes["Customer"]?.contains(placeholder) == true)
        let shown = try #require(try await outbox.record(Customer.self, id: placeholder))
        #expect(shown.name == "Mercearia Nova")
        #expect(shown.version == 0)
        try await outbox.enqueue(salesOrder(customer: placeholder, marker: "first order"))
        try await outbox.edit(CustomerUpdate.self, id: placeholder) { $0.phone = "+351 930 000 000" }
        #expect(try await outbox.record(Customer.self, id: placeholder)?.phone == "+351 930 000 000")
        #expect(try await outbox.records(Customer.bySegment(.retail)).map(\.id) == [placeholder])

        // Signal: the create lands, then the order and the edit, both remapped to the server id.
        let report = try await world.drain("rep", rounds: 3)
        #expect(report.sent == 3)
        #expect(report.conflicts == 0 && report.rejected == 0)
        let serverID = try #require(try await outbox.serverID(forPlaceholder: placeholder))
        let record = try #require(world.server.record("Customer", id: serverID, workspace: "acme"))
        #expect(record.version == 2)  // created, then edited under If-Match "1"
        let landed = try RecordProjection.decode(Customer.self, fields: record.fields, id: serverID, version: record.version)
        #expect(landed.phone == "+351 930 000 000")
        #expect(landed.name == "Mercearia Nova")
        let order = try #require(world.server.documents().first { $0.form == "SalesOrder" })
        #expect(try JSONDecoder().decode(SalesOrder.self, from: order.payload).customerId == EntityRef(serverID))

        // Re-keyed on the device: the placeholder finds the record under its server id.
        let rekeyed = try #require(try await outbox.record(Customer.self, id: placeholder))
        #expect(rekeyed.id == serverID)
        #expect(rekeyed.version == 2)
        #expect(try await outbox.records(Customer.all).map(\.id) == [serverID])
        _ = try await outbox.pull()
        try await Self.expectConverged(Customer.self, outbox, world, principal: "default")
    }

    @Test func theReferenceServerRefusesBadFeedQueriesAndHidesOtherScopes() async throws {
        let world = try World()
        let bobs = try world.server.putRecord(Delivery(courierId: "bob", status: .assigned, address: "Avenida 1"), workspace: "acme")
        let token = try world.server.issueAccessToken(principal: "ada", workspaces: ["acme"])
        func get(_ path: String) async throws -> (Int, [String: Any]) {
            var request = URLRequest(url: URL(string: world.server.baseURL.absoluteString + path)!)
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            request.setValue("acme", forHTTPHeaderField: "FormSync-Workspace")
            let (data, response) = try await URLSession.shared.data(for: request)
            return ((response as! HTTPURLResponse).statusCode, (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:])
        }
        #expect(try await get("/records/Delivery/\(bobs.id)").0 == 404)
        #expect(try await get("/changes?cursor=xyz").1["code"] as? String == "bad-cursor")
        #expect(try await get("/changes?limit=0").1["code"] as? String == "bad-limit")
        #expect(try await get("/changes?cursor=c1.999999").1["code"] as? String == "cursor-expired")
        let (status, page) = try await get("/changes")
        #expect(status == 200)
        #expect((page["changes"] as? [Any])?.isEmpty == true)
        #expect(page["more"] as? Bool == false)
    }
}

/// Found by `formsync-lab torture crash`: a second edit made while the first was on its way (its
/// reply lost after the server committed it) was merged against the pulled record, so the
/// device's own first edit looked like someone else's change and the second parked as a
/// conflict. Its base is now the record as shown, with the first edit in it.
struct EditBehindASentEditTests {
    @Test func aSecondEditWhileTheFirstIsUnconfirmedLandsWithoutAConflict() async throws {
        let world = try World()
        let delivery = try world.server.putRecord(
            Delivery(courierId: "ada", status: .assigned, stopOrder: 1, address: "Rua 1", recipient: "Ana"), workspace: "acme")
        let outbox = try world.device("ada", principal: "ada")
        #expect(try await outbox.pull().caughtUp)

        try await outbox.edit(DeliveryUpdate.self, id: delivery.id) { $0.recipient = "Rui" }
        world.server.faults.add(.dropAfterCommit, count: 1)
        _ = await outbox.flush()  // the server holds "Rui"; the device does not know
        #expect(world.server.record("Delivery", id: delivery.id, workspace: "acme")?.version == 2)

        let second = try await outbox.edit(DeliveryUpdate.self, id: delivery.id) { $0.recipient = "Rita" }
        for _ in 0..<5 where await outbox.stateCounts()[.confirmed] != 2 {
            world.clock.advance(by: 60_000)
            _ = await outbox.flush()
        }
        let landed = try #require(try await outbox.item(second))
        #expect(landed.state == .confirmed, "\(landed.lastError ?? "")")
        #expect(try await outbox.parkedItems().isEmpty)
        let server = try #require(world.server.record("Delivery", id: delivery.id, workspace: "acme"))
        #expect(try JSONDecoder().decode(Delivery.self, from: server.fields).recipient == "Rita")
    }
}

/// Found by `formsync-lab torture sim` (seeds 4135 and 8318 of 10,000): an edit whose reply was lost
/// after the server committed it was answered again by the server's ledger after the back
/// office had deleted the record and the device had pulled the deletion; the replayed reply's
/// record brought the deleted record back onto the device.
struct ReplayedAcknowledgementTests {
    @Test func aReplayedReplyDoesNotBringBackARecordTheFeedDeleted() async throws {
        let world = try World()
        let delivery = try world.server.putRecord(
            Delivery(courierId: "ada", status: .assigned, stopOrder: 1, address: "Rua 1"), workspace: "acme")
        let outbox = try world.device("ada", principal: "ada")
        #expect(try await outbox.pull().caughtUp)
        let edit = try await outbox.edit(DeliveryUpdate.self, id: delivery.id) { $0.recipient = "Rui" }
        world.server.faults.add(.dropAfterCommit, count: 1)
        _ = await outbox.flush()
        #expect(try await outbox.item(edit)?.state != .confirmed)

        _ = try world.server.deleteRecord("Delivery", id: delivery.id, workspace: "acme")
        #expect(try await outbox.pull().deleted == 1)
        for _ in 0..<3 where try await outbox.item(edit)?.state != .confirmed {
            world.clock.advance(by: 60_000)
            _ = await outbox.flush()
        }
        #expect(try await outbox.item(edit)?.state == .confirmed)  // the ledger's replay
        #expect(try await outbox.record(Delivery.self, id: delivery.id) == nil)
        #expect(try await outbox.records(Delivery.all).isEmpty)

        // The feed, in commit order, can still bring it back: the back office restores it.
        var restored = Delivery(courierId: "ada", status: .assigned, stopOrder: 1, address: "Rua 1, again")
        restored.id = delivery.id
        _ = try world.server.putRecord(restored, workspace: "acme")
        _ = try await outbox.pull()
        #expect(try await outbox.record(Delivery.self, id: delivery.id)?.address == "Rua 1, again")
    }
}
