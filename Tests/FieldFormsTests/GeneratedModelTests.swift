import FieldForms
import FormSyncModel
import Foundation
import Testing

/// The generated FieldForms models, compiled by the build plugin from FormSpecs/, used as an app
/// would use them.
struct GeneratedModelTests {
    static let deliveredAt = Timestamp("2026-11-30T08:26:57.125Z")!

    static func delivery() -> DeliveryConfirmation {
        DeliveryConfirmation(
            deliveryId: EntityRef(4711), outcome: .delivered, deliveredAt: deliveredAt,
            codAmount: Money(minorUnits: 1250, currency: "EUR"), recipientName: "Ana Lima",
            proofPhotos: [FileRef(id: -101, byteCount: 2_000_000, contentType: "image/jpeg")],
            signature: FileRef(id: -102, byteCount: 20_000, contentType: "image/png"))
    }

    static func inspection() -> SiteInspection {
        SiteInspection(
            siteCode: "LIS-0042", inspectorId: EntityRef(7), visitDate: LocalDate("2026-11-30"),
            arrivalTime: LocalTime("09:15"), location: GeoPoint(latitude: 38.72, longitude: -9.14),
            hazards: [.electrical], overallSeverity: .medium, temperatureCelsius: Decimal(string: "21.35"),
            audioNote: FileRef(id: -201, contentType: "audio/aac"),
            findings: [
                .init(
                    title: "Loose cable", severity: .high, photos: [FileRef(id: -202), FileRef(id: -203)],
                    followUpNeeded: true, followUpBy: LocalDate("2026-12-07"),
                    measurements: [.init(label: "gap", value: Decimal(string: "1.5"), unit: .mm)]),
                .init(title: "Rust", severity: .low, photos: [FileRef(id: 555)]),
            ])
    }

    @Test func formsCarryTheirNameVersionLaneAndEndpoint() {
        let d = Self.delivery()
        #expect(DeliveryConfirmation.formName == "DeliveryConfirmation")
        #expect(DeliveryConfirmation.formVersion == 3)
        #expect(d.lane == "Delivery:4711")
        #expect(d.endpoint == "/deliveries/4711/confirmations")
        #expect(Self.inspection().endpoint == "/sites/LIS-0042/inspections")
        #expect(NewCustomer().lane == nil)
        #expect(SalesOrder(customerId: EntityRef(-9)).lane == "Customer:-9")
    }

    @Test func jsonRoundTripKeepsMoneyExactAndDatesInISO8601() throws {
        let d = Self.delivery()
        let data = try JSONEncoder().encode(d)
        let object = try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["delivered_at"] as? String == "2026-11-30T08:26:57.125Z")
        #expect(object["delivery_id"] as? Int == 4711)
        #expect((object["cod_amount"] as? [String: Any])?["minor_units"] as? Int == 1250)
        #expect(object["note"] == nil)
        #expect(try JSONDecoder().decode(DeliveryConfirmation.self, from: data) == d)

        let inspection = Self.inspection()
        let back = try JSONDecoder().decode(SiteInspection.self, from: JSONEncoder().encode(inspection))
        #expect(back == inspection)
        #expect(back.temperatureCelsius == Decimal(string: "21.35"))
        #expect(back.visitDate?.description == "2026-11-30")
    }

    @Test func decodingAcceptsMissingListsAndRefusesUnknownOptions() throws {
        let minimal = try JSONDecoder().decode(SalesOrder.self, from: Data(#"{"customer_id": 5}"#.utf8))
        #expect(minimal.lines.isEmpty)
        #expect(minimal.customerId == EntityRef(5))
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(DeliveryConfirmation.self, from: Data(#"{"outcome": "lost"}"#.utf8))
        }
    }

    @Test func aCompletePayloadIsValid() {
        #expect(Self.delivery().validate().isEmpty)
        #expect(Self.inspection().validate().isEmpty)
    }

    @Test func validateReportsEveryErrorWithItsPointerIncludingNestedLists() {
        var d = Self.delivery()
        d.recipientName = nil
        d.signature = nil
        d.proofPhotos = []
        d.codAmount = Money(minorUnits: 100, currency: "USD")
        #expect(
            d.validate().map { "\($0.pointer) \($0.code)" } == [
                "#/cod_amount currency", "#/recipient_name required", "#/proof_photos min_count", "#/signature required",
            ])
        d.outcome = .notHome
        #expect(d.validate().map(\.pointer) == ["#/cod_amount", "#/proof_photos"])

        var s = Self.inspection()
        s.siteCode = "lis-42"
        s.findings[1].title = "ab"
        s.findings[1].followUpNeeded = true
        s.findings[0].measurements[0].unit = nil
        s.findings[0].photos = (1...7).map { FileRef(id: Int64(-300 - $0)) }
        #expect(
            s.validate().map { "\($0.pointer) \($0.code)" } == [
                "#/site_code pattern",
                "#/findings/0/photos max_count",
                "#/findings/0/measurements/0/unit required",
                "#/findings/1/title min_length",
                "#/findings/1/follow_up_by required",
            ])
    }

    @Test func salesOrderLinesAreValidatedOneByOne() {
        var order = SalesOrder(customerId: EntityRef(-5), orderDate: LocalDate("2026-11-30"))
        #expect(order.validate().map { "\($0.pointer) \($0.code)" } == ["#/lines required", "#/lines min_count"])
        order.lines = [
            .init(sku: "AB-1234", quantity: 2, unitPrice: Money(minorUnits: 999, currency: "EUR")),
            .init(sku: "x", quantity: 0, unitPrice: nil),
        ]
        #expect(
            order.validate().map { "\($0.pointer) \($0.code)" } == [
                "#/lines/1/sku pattern", "#/lines/1/quantity min", "#/lines/1/unit_price required",
            ])
    }

    @Test func fieldEnumsMapPointersBackToFieldsAtAnyDepth() throws {
        #expect(DeliveryConfirmation.Field(pointer: "#/recipient_name") == .recipientName)
        #expect(DeliveryConfirmation.Field(pointer: "#/proof_photos/2") == .proofPhotos(index: 2))
        let nested = SiteInspection.Field(pointer: "#/findings/0/measurements/3/unit")
        #expect(nested == .findings(index: 0, field: .measurements(index: 3, field: .unit)))
        #expect(nested?.pointer == "#/findings/0/measurements/3/unit")
        #expect(SiteInspection.Field(pointer: "#/location/latitude") == .location)
        #expect(SiteInspection.Field(pointer: "#/nope") == nil)
        for error in Self.brokenInspection().validate() {
            let field = try #require(SiteInspection.Field(pointer: error.pointer))
            #expect(field.pointer == error.pointer)
        }
    }

    static func brokenInspection() -> SiteInspection {
        var s = inspection()
        s.findings[0].measurements[0].label = nil
        s.findings[1].title = nil
        s.hazards = []
        return s
    }

    @Test func placeholdersAreListedFromFileAndReferenceFieldsAtAnyDepthOnlyOnce() {
        var s = Self.inspection()
        s.findings.append(.init(title: "Again", severity: .low, photos: [FileRef(id: -202)]))
        #expect(s.placeholders == [-201, -202, -203])
        #expect(Self.delivery().placeholders == [-101, -102])
        let order = SalesOrder(customerId: EntityRef(-77), signedByCustomer: FileRef(id: -78))
        #expect(order.placeholders == [-77, -78])
    }

    @Test func remappingSwapsPlaceholdersInNestedFileFieldsAndReferencesOnly() {
        let s = Self.inspection()
        let ids: [Int64: Int64] = [-201: 9001, -202: 9002, -203: 9003, 7: 12345]
        let remapped = s.remapped(ids)
        #expect(remapped.audioNote?.id == 9001)
        #expect(remapped.findings[0].photos.map(\.id) == [9002, 9003])
        #expect(remapped.findings[1].photos.map(\.id) == [555])
        #expect(remapped.placeholders.isEmpty)
        // Only placeholders are swapped: a server id that happens to be a key in the map is left
        // alone, and the original payload is untouched.
        #expect(remapped.inspectorId == EntityRef(7))
        #expect(s.placeholders == [-201, -202, -203])
        #expect(remapped.findings[0].measurements == s.findings[0].measurements)

        let order = SalesOrder(customerId: EntityRef(-77), lines: [.init(sku: "AB-1234", quantity: 1)])
        #expect(order.remapped([-77: 501]).customerId == EntityRef(501))
        #expect(order.remapped([-77: 501]).lines == order.lines)
    }

    @Test func mergeTakesNonConflictingChangesFromBothSides() {
        let base = Self.delivery()
        var local = base
        local.recipientName = "Ana M. Lima"
        var server = base
        server.leftWithNeighbour = true
        let result = DeliveryConfirmation.merge(base: base, local: local, server: server)
        #expect(result.isClean)
        #expect(result.merged.recipientName == "Ana M. Lima")
        #expect(result.merged.leftWithNeighbour == true)
    }

    @Test func mergeFlagsASameFieldClashUnderTheDefaultPolicy() {
        let base = Self.delivery()
        var local = base
        local.recipientName = "Local"
        var server = base
        server.recipientName = "Server"
        let result = DeliveryConfirmation.merge(base: base, local: local, server: server)
        #expect(result.conflicts.map(\.pointer) == ["#/recipient_name"])
        #expect(result.merged.recipientName == "Server")
    }

    @Test func moneyWithServerAuthorityTakesTheServersAmountAndReportsTheLocalEdit() {
        let base = Self.delivery()
        var local = base
        local.codAmount = Money(minorUnits: 1500, currency: "EUR")
        var server = base
        server.codAmount = Money(minorUnits: 1300, currency: "EUR")
        let result = DeliveryConfirmation.merge(base: base, local: local, server: server)
        #expect(result.merged.codAmount == Money(minorUnits: 1300, currency: "EUR"))
        #expect(result.conflicts.map(\.pointer) == ["#/cod_amount"])

        let untouched = DeliveryConfirmation.merge(base: base, local: base, server: server)
        #expect(untouched.isClean)
        #expect(untouched.merged.codAmount == Money(minorUnits: 1300, currency: "EUR"))
    }

    @Test func clientServerAndAskPoliciesApplyPerField() {
        // left_with_neighbour: client; note: ask; signed_by_customer: server; customer_reference: client.
        let base = Self.delivery()
        var local = base
        local.leftWithNeighbour = false
        var server = base
        server.leftWithNeighbour = true
        server.note = "Gate code 1234"
        let result = DeliveryConfirmation.merge(base: base, local: local, server: server)
        #expect(result.merged.leftWithNeighbour == false)
        #expect(result.conflicts.map(\.pointer) == ["#/note"])

        let orderBase = SalesOrder(customerId: EntityRef(1), customerReference: "PO-1", signedByCustomer: FileRef(id: 10))
        var orderLocal = orderBase
        orderLocal.customerReference = "PO-2"
        orderLocal.signedByCustomer = FileRef(id: 11)
        var orderServer = orderBase
        orderServer.customerReference = "PO-3"
        orderServer.signedByCustomer = FileRef(id: 12)
        let order = SalesOrder.merge(base: orderBase, local: orderLocal, server: orderServer)
        #expect(order.isClean)
        #expect(order.merged.customerReference == "PO-2")
        #expect(order.merged.signedByCustomer == FileRef(id: 12))
    }
}
