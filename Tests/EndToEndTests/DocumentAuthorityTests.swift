import FieldForms
import FormSyncClient
import FormSyncModel
import Foundation
import Testing

/// A document's edit (`If-Match` on a document the server holds) follows the same rule as a
/// record's: the server's value stands for every field it owns (`authority: server`), and an edit
/// that changes one is `409 authority-conflict`, which the device parks as a conflict.
@Suite struct DocumentAuthorityTests {
    static func order(credit: Int64?, reference: String? = nil) -> SalesOrder {
        var order = salesOrder(customer: 1, marker: reference ?? "")
        order.creditLimit = credit.map { Money(minorUnits: $0, currency: "EUR") }
        return order
    }

    static func storedCredit(_ world: World, _ documentID: String) throws -> Int64? {
        let held = try #require(world.server.document(documentID))
        return try JSONDecoder().decode(SalesOrder.self, from: held.payload).creditLimit?.minorUnits
    }

    @Test func anEditThatChangesAServerOwnedFieldIsParkedAsAConflictAndTheServersValueStands() async throws {
        let world = try World()
        let outbox = try world.device()
        let original = Self.order(credit: 50_000)
        try await outbox.enqueue(original, documentID: "order-1")
        #expect(await outbox.flush().sent == 1)
        let before = try Self.storedCredit(world, "order-1")

        let edit = try await outbox.enqueue(Self.order(credit: 900_000), documentID: "order-1", base: (original, "\"1\""))
        let report = await outbox.flush()
        #expect(report.sent == 0)
        #expect(report.conflicts == 1)
        let item = try #require(try await outbox.item(edit))
        #expect(item.state == .conflict)
        #expect(item.serverVersion == "\"1\"")
        #expect(world.server.document("order-1")?.version == 1)
        #expect(try Self.storedCredit(world, "order-1") == before)
    }

    @Test func anEditThatLeavesTheServerOwnedFieldAsItIsGoesThrough() async throws {
        let world = try World()
        let outbox = try world.device()
        let original = Self.order(credit: nil)
        try await outbox.enqueue(original, documentID: "order-2")
        #expect(await outbox.flush().sent == 1)
        try await outbox.enqueue(Self.order(credit: nil, reference: "PO-7"), documentID: "order-2", base: (original, "\"1\""))
        #expect(await outbox.flush().sent == 1)
        let held = try #require(world.server.document("order-2"))
        #expect(held.version == 2)
        #expect(try JSONDecoder().decode(SalesOrder.self, from: held.payload).customerReference == "PO-7")
    }
}
