import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import FormSyncTesting
import Foundation
import Testing

/// Deletes through the outbox (issue 47), over real HTTP: a form that `deletes:` a record removes
/// it from the device at once and from the server once; an unsent edit of a record the server
/// deleted is parked with its reason, never sent to fail; a delete decided on a version someone
/// changed since waits for a person.
struct DeleteTests {
    static func finding(_ title: String) -> Finding {
        Finding(siteCode: "LIS-0042", visitDate: LocalDate("2026-12-06"), title: title, severity: .low)
    }

    @Test func aDeleteRemovesTheRecordAtOnceAndOnTheServerOnceAfterTheEditQueuedBeforeIt() async throws {
        let world = try World()
        let kept = try world.server.putRecord(Self.finding("Loose cable"), workspace: "acme")
        let doomed = try world.server.putRecord(Self.finding("Duplicate of loose cable"), workspace: "acme")
        let outbox = try world.device()
        _ = try await outbox.pull()
        #expect(Set(try await outbox.records(Finding.all).map(\.id)) == [kept.id, doomed.id])

        // An edit, then the delete of the same record: the edit goes first, the delete after it.
        try await outbox.edit(FindingUpdate.self, id: doomed.id) { $0.status = .open }
        let removal = try await outbox.delete(FindingRemoval.self, id: doomed.id) { $0.reason = .duplicate }
        #expect(try await outbox.records(Finding.all).map(\.id) == [kept.id], "gone from every read at once")
        await #expect(throws: OutboxError.self) {
            try await outbox.edit(FindingUpdate.self, id: doomed.id) { $0.status = .fixed }
        }
        #expect(world.server.records(workspace: "acme").contains { $0.id == doomed.id }, "nothing sent yet")

        var sent = 0
        for _ in 0..<5 where sent < 2 { sent += await outbox.flush().sent }
        #expect(sent == 2)
        #expect(try await outbox.item(removal)?.state == .confirmed, "no conflict with its own edit")
        #expect(world.server.records(workspace: "acme").map(\.id) == [kept.id])
        #expect(try await outbox.records(Finding.all).map(\.id) == [kept.id])

        // Another device pulls the deletion; the delete sent again (a lost reply) changes nothing.
        let other = try world.device("tablet")
        _ = try await other.pull()
        #expect(try await other.records(Finding.all).map(\.id) == [kept.id])
        let history = world.server.documents().filter { $0.form == "FindingRemoval" }
        #expect(history.count == 1 && history.first?.appliedWrites == 1)
    }

    @Test func anUnsentEditOfARecordTheServerDeletedIsParkedWithItsReasonNotSentToFail() async throws {
        let world = try World()
        let finding = try world.server.putRecord(Self.finding("Cracked tile"), workspace: "acme")
        let outbox = try world.device()
        _ = try await outbox.pull()
        let edit = try await outbox.edit(FindingUpdate.self, id: finding.id) { $0.status = .planned }

        // The back office removes the finding before the edit leaves the phone.
        #expect(try world.server.deleteRecord("Finding", id: finding.id, workspace: "acme"))
        let pulled = try await outbox.pull()
        #expect(pulled.deleted == 1)
        let parked = try #require(try await outbox.item(edit))
        #expect(parked.state == .rejected)
        #expect(parked.lastError?.contains("Finding \(finding.id) was deleted on the server") == true, "\(parked.lastError ?? "")")
        #expect(parked.fieldErrors.map(\.code) == ["deleted"] && parked.fieldErrors.first?.pointer == "#/finding_id")
        let report = await outbox.flush()
        #expect(report.sent == 0, "never sent to fail")
        #expect(world.server.documents().filter { $0.form == "FindingUpdate" }.isEmpty)
    }

    @Test func aDeleteOfARecordSomeoneChangedSinceWaitsForAPerson() async throws {
        let world = try World()
        let finding = try world.server.putRecord(Self.finding("Rust on the rail"), workspace: "acme")
        let outbox = try world.device()
        _ = try await outbox.pull()
        let removal = try await outbox.delete(FindingRemoval.self, id: finding.id) { $0.reason = .notADefect }

        // Meanwhile a supervisor adds a note: the finding may matter after all.
        var changed = finding
        changed.note = "Structural: keep"
        _ = try world.server.putRecord(changed, workspace: "acme")
        _ = await outbox.flush()
        let parked = try #require(try await outbox.item(removal))
        #expect(parked.state == .conflict, "\(parked.lastError ?? "")")
        #expect(parked.lastError?.contains("after it was chosen for deletion") == true)
        #expect(world.server.records(workspace: "acme").contains { $0.id == finding.id }, "the record stays until a person decides")
    }
}
