import FormSyncTesting
import Foundation
import Testing

@testable import FormSyncClient

/// A device nobody signed in on pays nothing for owners in its hot reads: an item by id and a
/// lane's head read no `item_owners` until an item has an owner.
struct OwnerlessReadsTests {
    @Test func theHotReadsOfADeviceWithoutPeopleSkipTheOwnerLookupUntilAnItemHasAnOwner() async throws {
        #expect(!OutboxStore.itemQueryWithoutOwners.sql.contains("item_owners"))
        #expect(!OutboxStore.laneHeadQueryWithoutOwners.sql.contains("item_owners"))
        #expect(OutboxStore.itemQuery.sql.contains("item_owners") && OutboxStore.laneHeadQuery.sql.contains("item_owners"))
        let h = try Harness()
        let outbox = try h.open()
        try await outbox.enqueue(order(1))
        #expect(try await outbox.items(in: [.savedOnDevice]).map(\.principal) == [nil])
        // The first owned item switches the reads: its owner is read back, its lane waits for her.
        try await outbox.signIn("ana")
        try await outbox.enqueue(order(2))
        try await outbox.signOut("ana")
        try await outbox.signIn("bo")
        #expect(try await outbox.itemsWaitingForTheirOwners().map(\.principal) == ["ana"])
        #expect(await outbox.flush().sent == 1)
    }
}
