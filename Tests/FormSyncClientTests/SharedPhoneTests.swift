import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncSQLite
import FormSyncTesting
import Foundation
import Testing

/// A phone shared by a shift pool: every item records who captured it, goes out only under that
/// person's credential, waits for them while they are signed out, and changes hands only by a
/// person's recorded act; each person sees their own items and records.
struct SharedPhoneTests {
    let h: Harness

    init() throws {
        h = try Harness()
    }

    func open() throws -> Outbox { try h.openWithRecords() }

    /// Who each submission went out as, by document id.
    var sentAs: [String: String?] {
        Dictionary(h.transport.requests.filter { !$0.isFileUpload }.map { ($0.documentID, $0.principal) }, uniquingKeysWith: { a, _ in a })
    }

    @Test func eachPersonsItemsGoOutUnderTheirOwnCredentialAndWaitWhileTheyAreSignedOut() async throws {
        let outbox = try open()
        try await outbox.signIn("ana")
        try await outbox.enqueue(order(1), documentID: "ana-1")
        try await outbox.enqueue(order(2), documentID: "ana-2")
        try await outbox.signIn("bo")
        try await outbox.enqueue(order(3), documentID: "bo-1")
        try await outbox.signOut("ana")

        let first = await outbox.flush()
        #expect(first.sent == 1)
        #expect(sentAs == ["bo-1": "bo"])
        let waiting = try await outbox.itemsWaitingForTheirOwners()
        #expect(waiting.map(\.documentID) == ["ana-1", "ana-2"])
        #expect(waiting.allSatisfy { $0.state == .waitingForItsOwner && $0.principal == "ana" })
        // Nothing is left that can go without Ana: the flush does not count her items as its work.
        #expect(first.remaining == 0)

        // Ana signs in again beside Bo (Bo stays the one capturing): her items go, as her.
        try await outbox.signIn("ana", current: false)
        #expect(await outbox.currentPrincipal == "bo")
        #expect(await outbox.flush().sent == 2)
        #expect(sentAs == ["bo-1": "bo", "ana-1": "ana", "ana-2": "ana"])
        #expect(try await outbox.itemsWaitingForTheirOwners().isEmpty)
    }

    @Test func eachPersonSeesOnlyTheirOwnItemsAndCannotActOnAnothersWithoutAHandOver() async throws {
        let outbox = try open()
        try await outbox.signIn("ana")
        let anas = try await outbox.enqueue(order(1))
        try await outbox.signIn("bo")
        let bos = try await outbox.enqueue(order(2))
        #expect(try await outbox.items(in: Set(SyncState.allCases)).map(\.id) == [bos])
        var snapshots = await outbox.snapshots().makeAsyncIterator()
        #expect(await snapshots.next()?.counts == [SyncState.savedOnDevice: 1])
        let refusal = OutboxError.otherPerson(id: anas, owner: "ana", current: "bo")
        await #expect(throws: refusal) { try await outbox.item(anas) }
        await #expect(throws: refusal) { try await outbox.retry(anas) }
        await #expect(throws: refusal) { try await outbox.discard(anas) }
        try await outbox.signIn("ana")
        #expect(try await outbox.items(in: Set(SyncState.allCases)).map(\.id) == [anas])
        #expect(try await outbox.item(anas)?.principal == "ana")
    }

    @Test func aHandOverIsAPersonsActRecordedWithTheItemAndItsFilesGoWithIt() async throws {
        let outbox = try open()
        try await outbox.signIn("ana")
        let photo = outbox.placeholderIDs.next()
        var delivery = GeneratedFixtures.delivery()
        delivery.proofPhotos = [FileRef(id: photo, contentType: "image/jpeg")]
        let id = try await outbox.enqueue(
            delivery, attachments: [.init(placeholder: photo, source: try h.cameraFile("door.jpg"), contentType: "image/jpeg")])
        try await outbox.signOut("ana")
        // Nobody signed in cannot hand anything over: a hand-over names who did it.
        await #expect(throws: OutboxError.nobodySignedIn) { try await outbox.handOver(id, to: "bo") }
        try await outbox.signIn("bo")
        #expect(await outbox.flush().sent == 0)
        try await outbox.handOver(id, to: "bo")

        let report = await outbox.flush()
        #expect(report.sent == 2)
        #expect(h.transport.requests.allSatisfy { $0.principal == "bo" })
        let handovers = try await outbox.handovers(of: id)
        #expect(handovers.count == 1)
        #expect(handovers.first.map { ($0.from, $0.to, $0.by) } ?? (nil, "", "") == ("ana", "bo", "bo"))
        #expect(try await outbox.item(id)?.state == .confirmed)
        // The inspector shows who handed what over, from the file.
        let inspector = try OutboxInspector(path: h.path)
        #expect(try inspector.handovers(of: id).map(\.by) == ["bo"])
        #expect(try inspector.people().map(\.principal) == ["ana", "bo"])
    }

    @Test func eachPersonPullsAndSeesTheirOwnRecordsAndSwitchingBackPullsNothingAgain() async throws {
        let outbox = try open()
        try await outbox.signIn("ana")
        h.transport.scriptFeed(RecordStoreTests.page([RecordStoreTests.delivery(1, stop: 1, courier: "ana")], "a1"))
        _ = try await outbox.pull()
        try await outbox.signIn("bo")
        #expect(try await outbox.records(Delivery.all).isEmpty)
        h.transport.scriptFeed(RecordStoreTests.page([RecordStoreTests.delivery(2, stop: 1, courier: "bo")], "b1"))
        _ = try await outbox.pull()
        #expect(try await outbox.records(Delivery.all).map(\.id) == [2])
        #expect(h.transport.feedPrincipals == ["ana", "bo"])
        #expect(h.transport.feedCursors == [nil, nil])

        // Back to Ana, offline: her records are there as she left them, with no pull.
        try await outbox.signIn("ana")
        #expect(try await outbox.records(Delivery.all).map(\.id) == [1])
        // Her next pull goes on from her own cursor.
        _ = try await outbox.pull()
        #expect(h.transport.feedCursors == [nil, nil, "a1"])
        #expect(h.transport.feedPrincipals == ["ana", "bo", "ana"])
    }

    @Test func onePersonRevokedSealsTheirUnsentWorkAndPurgesTheirRecordsWhileTheOthersWorkOn() async throws {
        let outbox = try open()
        try await outbox.signIn("ana")
        h.transport.scriptFeed(RecordStoreTests.page([RecordStoreTests.delivery(1, stop: 1, courier: "ana")], "a1"))
        _ = try await outbox.pull()
        try await outbox.enqueue(order(1), documentID: "ana-1")
        try await outbox.signIn("bo")
        h.transport.scriptFeed(RecordStoreTests.page([RecordStoreTests.delivery(2, stop: 1, courier: "bo")], "b1"))
        _ = try await outbox.pull()
        // Bo's order is behind Ana's in the same customer's lane: sealing hers must not strand his.
        try await outbox.enqueue(order(1), documentID: "bo-1")

        let events = outbox.events()
        #expect(try await outbox.personRevoked("ana", reason: "phone reported lost by Ana") == 1)
        var seen = events.makeAsyncIterator()
        #expect(await seen.next() == .personRevoked(principal: "ana", reason: "phone reported lost by Ana", sealed: 1))
        #expect(await outbox.signedIn == ["bo"])
        #expect(await outbox.flush().sent == 1)
        #expect(sentAs == ["bo-1": "bo"])
        #expect(try await outbox.records(Delivery.all).map(\.id) == [2], "Bo's records stay")

        let inspector = try OutboxInspector(path: h.path)
        let sealed = try inspector.items(workspace: "acme", in: [.sealed])
        #expect(sealed.map(\.documentID) == ["ana-1"])
        #expect(sealed.first?.lastError?.contains("phone reported lost by Ana") == true)
        #expect(try inspector.recordCount(workspace: "acme") == 1, "Ana's pulled records are gone")
    }

    /// An item of Ana's was on the wire when her credential was revoked: when it comes back
    /// refused, it is sealed too, never left waiting for a person who will not come back.
    @Test func aRevokedPersonsItemBackFromTheWireIsSealed() async throws {
        let outbox = try open()
        try await outbox.signIn("ana")
        let id = try await outbox.enqueue(order(1), documentID: "ana-1")
        try await outbox.signIn("bo")
        h.transport.script(.hang)
        let flushing = Task { await outbox.flush() }
        while h.transport.hangingCount == 0 { await Task.yield() }
        try await outbox.personRevoked("ana", reason: "lost")
        h.transport.release(.authExpired)
        _ = await flushing.value
        let inspector = try OutboxInspector(path: h.path)
        #expect(try inspector.item(id)?.state == .sealed)
        // Reopened, the revocation still holds: Ana's next capture on this phone (she signs in
        // with a new credential) goes out; what was sealed stays sealed.
        try await outbox.signIn("ana")
        try await outbox.enqueue(order(2), documentID: "ana-2")
        #expect(await outbox.flush().sent == 1)
        #expect(try OutboxInspector(path: h.path).item(id)?.state == .sealed)
    }

    @Test func whoIsSignedInAndWhoOwnsWhatSurviveARestart() async throws {
        var outbox: Outbox? = try open()
        try await outbox!.signIn("ana")
        try await outbox!.enqueue(order(1), documentID: "ana-1")
        try await outbox!.signIn("bo")
        h.transport.scriptFeed(RecordStoreTests.page([RecordStoreTests.delivery(2, stop: 1, courier: "bo")], "b1"))
        _ = try await outbox!.pull()
        try await outbox!.signOut("ana")
        outbox = nil
        let reopened = try open()
        #expect(await reopened.currentPrincipal == "bo")
        #expect(await reopened.signedIn == ["bo"])
        #expect(try await reopened.itemsWaitingForTheirOwners().map(\.principal) == ["ana"])
        // Bo's records, as he left them; his next pull goes on from his own cursor, as him.
        #expect(try await reopened.records(Delivery.all).map(\.id) == [2])
        _ = try await reopened.pull()
        #expect(h.transport.feedCursors.last == "b1")
        #expect(h.transport.feedPrincipals.last == "bo")
        #expect(await reopened.flush().sent == 0)
    }

    /// Once people use the phone, nobody signed in means nobody to pull for: no request goes
    /// out under no one's credential.
    @Test func aSharedPhoneWithNobodySignedInPullsNothing() async throws {
        let outbox = try open()
        try await outbox.signIn("ana")
        _ = try await outbox.pull()
        try await outbox.signOut("ana")
        let report = try await outbox.pull()
        #expect(report.pages == 0 && h.transport.feedPrincipals == ["ana"])
    }

    @Test func aNameThatCannotBeAPersonsIsRefused() async throws {
        let outbox = try open()
        for name in ["", String(repeating: "a", count: 129), "ana\u{1F}bo", "line\nbreak"] {
            await #expect(throws: OutboxError.invalidPrincipal(name)) { try await outbox.signIn(name) }
        }
        #expect(await outbox.currentPrincipal == nil)
    }

    /// A device nobody ever signed in on keeps working as it always did: its items have no
    /// owner, go out as soon as they can, and its records stay where they were.
    @Test func aDeviceWithoutPeopleIsUnchanged() async throws {
        let outbox = try open()
        try await outbox.enqueue(order(1))
        #expect(await outbox.flush().sent == 1)
        #expect(h.transport.requests.map(\.principal) == [nil])
    }
}
