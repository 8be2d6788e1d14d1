import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import Foundation
import Testing

/// The example forms' expressions, from a device through real HTTP to the server: the device
/// queues what `recalculated()` settles, and the server refuses, with the field's pointer, a
/// payload that skipped the device's rules.
struct FormsThatThinkTests {
    static func inspection(passed: Bool?, reason: String? = nil, arrival: String = "09:00", departure: String? = "10:30") -> SiteInspection
    {
        SiteInspection(
            siteCode: "LIS-0042", inspectorId: EntityRef(7), visitDate: LocalDate("2026-11-30"), arrivalTime: LocalTime(arrival),
            departureTime: departure.flatMap(LocalTime.init), passed: passed, failureReason: reason,
            location: GeoPoint(latitude: 38.7, longitude: -9.1), hazards: [.none])
    }

    static func json(_ payload: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: try FormRegistry.encode(payload)) as? [String: Any])
    }

    @Test func theDeviceQueuesTheSettledPayloadAndTheServerStoresIt() async throws {
        let world = try World()
        let outbox = try world.device()
        // A reason typed while "passed" was false, then "passed" turned true: it does not apply, and is not sent.
        try await outbox.enqueue(Self.inspection(passed: true, reason: "typed, then the site passed"))
        try await outbox.enqueue(Self.inspection(passed: false, reason: "gas leak"))
        try await outbox.enqueue(salesOrder(customer: 5, lines: 3))
        _ = try await world.drain()
        let documents = world.server.documents()
        #expect(documents.count == 3)
        let inspections = try documents.filter { $0.form == "SiteInspection" }.map {
            try #require(try JSONSerialization.jsonObject(with: $0.payload) as? [String: Any])
        }
        #expect(inspections.map { $0["failure_reason"] as? String }.sorted { ($0 ?? "") < ($1 ?? "") } == [nil, "gas leak"])
        let order = try #require(documents.first { $0.form == "SalesOrder" })
        let stored = try JSONDecoder().decode(SalesOrder.self, from: order.payload)
        // Lines 100×1, 101×2, 102×3 EUR cents.
        #expect(stored.lines.map(\.lineTotal) == [100, 202, 306].map { Money(minorUnits: $0, currency: "EUR") })
        #expect(stored.total == Money(minorUnits: 608, currency: "EUR"))
    }

    @Test func aPayloadBreakingAConstraintIsRefusedOnTheDeviceBeforeAnythingIsQueued() async throws {
        let world = try World()
        let outbox = try world.device()
        await #expect {
            try await outbox.enqueue(Self.inspection(passed: false, reason: "late", arrival: "11:00", departure: "10:30"))
        } throws: { error in
            guard case OutboxError.invalidPayload(let errors) = error else { return false }
            return errors.map(\.pointer) == ["#/departure_time"] && errors.map(\.code) == ["constraint"]
                && errors.first?.detail == "The departure must be after the arrival."
        }
        #expect(await outbox.stateCounts().values.reduce(0, +) == 0)
        #expect(Self.inspection(passed: nil).isRelevant(.failureReason) == false)
        #expect(Self.inspection(passed: false).isRelevant(.failureReason))
        let customer = NewCustomer(name: "Ana", segment: .retail, region: .south)
        #expect(customer.offeredOptions(for: .district) == ["vineyards", "coast"])
    }

    @Test func theServerRefusesWhatSkippedTheDevicesRulesWithTheFieldsPointer() async throws {
        let world = try World()
        let transport = world.transport()
        func send(_ form: String, _ version: Int, _ endpoint: String, _ object: [String: Any], key: String) async throws -> [FieldError]? {
            let outcome = await transport.send(
                OutboundRequest(
                    itemID: 1, documentID: "doc-\(key)", attemptID: "key-\(key)", workspace: "acme",
                    body: .submission(
                        form: form, version: version, endpoint: endpoint,
                        payload: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), baseVersion: nil)))
            if case .rejected(_, let errors) = outcome { return errors }
            return nil
        }
        var late = try Self.json(Self.inspection(passed: true, arrival: "11:00", departure: "10:30"))
        var errors = try await send("SiteInspection", SiteInspection.formVersion, "/sites/LIS-0042/inspections", late, key: "late")
        #expect(
            errors?.map { "\($0.pointer) \($0.code) \($0.detail)" } == [
                "#/departure_time constraint The departure must be after the arrival."
            ])

        late["departure_time"] = "12:00"
        late["failure_reason"] = "the site passed"
        errors = try await send("SiteInspection", SiteInspection.formVersion, "/sites/LIS-0042/inspections", late, key: "stale")
        #expect(errors?.map { "\($0.pointer) \($0.code)" } == ["#/failure_reason not_relevant"])

        var order = try Self.json(salesOrder(customer: 5, lines: 2).recalculated())
        order["total"] = ["minor_units": 1, "currency": "EUR"]
        errors = try await send("SalesOrder", SalesOrder.formVersion, "/customers/5/orders", order, key: "total")
        #expect(
            errors?.map { "\($0.pointer) \($0.code) \($0.detail)" } == [
                "#/total calculated Must be 302 EUR minor units, as its calculation gives."
            ])

        let customer = try Self.json(NewCustomer(name: "Ana", segment: .retail, region: .south, district: .harbour))
        errors = try await send("NewCustomer", NewCustomer.formVersion, "/customers", customer, key: "district")
        #expect(errors?.map { "\($0.pointer) \($0.code)" } == ["#/district not_offered"])
        #expect(world.server.documents().isEmpty)
    }
}
