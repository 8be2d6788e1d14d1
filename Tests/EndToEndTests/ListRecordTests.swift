import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

/// Several records from one visit (issue 47), over real HTTP: an inspection's findings each
/// become a `Finding` record, shown on the device at once under placeholders of their own,
/// which another queued form may name before anything reached the server; the server creates
/// the document and every finding together and the device swaps each placeholder for its id.
struct ListRecordTests {
    static func inspection(findings: Int) -> SiteInspection {
        SiteInspection(
            siteCode: "LIS-0042", inspectorId: EntityRef(7), visitDate: LocalDate("2026-12-06"), passed: true,
            location: GeoPoint(latitude: 38.7, longitude: -9.1), hazards: [.none],
            findings: (0..<findings).map { n in
                SiteInspection.Finding(title: "Finding \(n)", severity: n % 2 == 0 ? .low : .high, followUpNeeded: false)
            })
    }

    @Test func anInspectionWithFiveFindingsCreatesFiveRecordsThatALaterFormEditsBeforeAnyReachedTheServer() async throws {
        let world = try World()
        let outbox = try world.device()
        let item = try await outbox.enqueue(Self.inspection(findings: 5))
        let placeholders = try #require(try await outbox.itemRecordPlaceholders(of: item)["findings"])
        #expect(placeholders.count == 5 && Set(placeholders).count == 5 && placeholders.allSatisfy { $0 < 0 })

        // Offline, the five findings are there already, each with the inspection's site and day.
        let shown = try await outbox.records(Finding.all)
        #expect(Set(shown.map(\.id)) == Set(placeholders))
        #expect(shown.allSatisfy { $0.siteCode == "LIS-0042" && $0.visitDate == LocalDate("2026-12-06") })
        #expect(try await outbox.record(Finding.self, id: placeholders[3])?.title == "Finding 3")

        // A repair planned against the fourth finding, before anything was sent.
        try await outbox.edit(FindingUpdate.self, id: placeholders[3]) {
            $0.status = .planned
            $0.note = "parts ordered"
        }
        #expect(try await outbox.record(Finding.self, id: placeholders[3])?.status == .planned)
        #expect(world.server.documents().isEmpty)

        var sent = 0
        for _ in 0..<5 where sent < 2 { sent += await outbox.flush().sent }
        #expect(sent == 2, "the inspection, then the edit that waited for its finding")

        // On the server: the inspection and its five findings; the fourth edited once.
        let findings = world.server.records(workspace: "acme").filter { $0.type == "Finding" }
        #expect(findings.count == 5)
        let byTitle = Dictionary(
            try findings.map { (try JSONDecoder().decode(Finding.self, from: $0.fields).title ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        let fourth = try #require(byTitle["Finding 3"])
        let planned = try JSONDecoder().decode(Finding.self, from: fourth.fields)
        #expect(fourth.version == 2 && planned.status == .planned)
        #expect(findings.filter { $0.id != fourth.id }.allSatisfy { $0.version == 1 })
        #expect(world.server.documents().filter { $0.form == "SiteInspection" }.count == 1)

        // On the device: each placeholder landed as its finding's server id, and the records
        // are the server's.
        for (n, placeholder) in placeholders.enumerated() {
            let id = try #require(try await outbox.serverID(forPlaceholder: placeholder))
            #expect(byTitle["Finding \(n)"]?.id == id)
        }
        let held = try await outbox.records(Finding.all)
        #expect(Set(held.map(\.id)) == Set(findings.map(\.id)))
        #expect(held.first { $0.id == fourth.id }?.status == .planned)

        // Another device pulls them.
        let other = try world.device("office-tablet")
        _ = try await other.pull()
        #expect(Set(try await other.records(Finding.all).map(\.id)) == Set(findings.map(\.id)))
    }
}
