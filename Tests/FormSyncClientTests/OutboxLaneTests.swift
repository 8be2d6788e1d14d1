import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

struct OutboxLaneTests {
    @Test func orderIsKeptInALaneWhenItsHeadRetriesAndOtherLanesAreNotBlocked() async throws {
        let h = try Harness()
        var outbox = try h.open()
        try await outbox.enqueue(order(1, sku: "A-0001"), documentID: "A")
        try await outbox.enqueue(order(1, sku: "B-0001"), documentID: "B")
        try await outbox.enqueue(order(2), documentID: "D")
        try await outbox.enqueue(order(1, sku: "C-0001"), documentID: "C")
        h.transport.script(.transient(reason: "timeout", retryAfter: nil), when: { $0.documentID == "A" })

        let first = await outbox.flush()
        #expect(h.sentDocuments.sorted() == ["A", "D"])
        #expect(first.sent == 1)
        #expect(first.retrying == 1)
        #expect(first.remaining == 3)

        outbox = try h.open()  // reopen mid-scenario: nothing is lost
        #expect(await outbox.flush().sent == 0)  // the retry is not due yet
        h.clock.advance(by: 60_000)
        let second = await outbox.flush()
        #expect(second.sent == 3)
        #expect(h.sentDocuments.filter { $0 != "D" } == ["A", "A", "B", "C"])
        #expect(second.remaining == 0)
    }

    @Test func theConcurrencyBoundIsHonouredAndNoLaneIsOvertakenWhenItIsRaised() async throws {
        let h = try Harness()
        h.configuration.concurrency = 2
        var outbox = try h.open()
        for customer in 1...4 {
            try await outbox.enqueue(order(Int64(customer)), documentID: "first-\(customer)")
            try await outbox.enqueue(order(Int64(customer)), documentID: "second-\(customer)")
        }
        for _ in 0..<4 { h.transport.script(.hang) }
        let o1 = outbox
        let flushing = Task { await o1.flush() }
        await eventually("two hanging requests") { h.transport.hangingCount == 2 }
        #expect(h.transport.requests.count == 2)
        #expect(await outbox.stateCounts()[.sent] == 2)
        h.transport.release(.done(ServerAcknowledgement(serverID: 1)))
        await eventually("two more") { h.transport.hangingCount == 2 }
        h.transport.release(.done(ServerAcknowledgement(serverID: 2)))
        let report = await flushing.value
        #expect(report.sent == 8)
        #expect(h.transport.peakInFlight == 2)

        // Raising the bound: more lanes at once, but each lane still in order.
        h.configuration.concurrency = 8
        outbox = try h.open()
        try await enqueueLanes(outbox, customers: 4, perCustomer: 3)
        _ = await outbox.flush()
        expectLaneOrder(h, customers: 4, perCustomer: 3)
        #expect(h.transport.peakInFlight <= 4)  // never more than one request per lane
    }

    @Test func twoConcurrentFlushesSendEachItemOnce() async throws {
        let h = try Harness()
        let outbox = try h.open()
        for n in 0..<20 { try await outbox.enqueue(order(Int64(n % 5 + 1)), documentID: "doc-\(n)") }
        async let a = outbox.flush()
        async let b = outbox.flush()
        let (ra, rb) = await (a, b)
        #expect(ra.sent + rb.sent == 20)  // the second caller waits for the first pass, then runs its own
        #expect(h.sentDocuments.count == 20)
        #expect(Set(h.sentDocuments).count == 20)
    }

    @Test func aWorkspaceOnlyEverSendsItsOwnItems() async throws {
        let h = try Harness()
        var outbox = try h.open(workspace: "acme")
        try await outbox.enqueue(order(1), documentID: "acme-1")
        try await outbox.switchWorkspace(to: "globex")
        try await outbox.enqueue(order(1), documentID: "globex-1")
        _ = await outbox.flush()
        let globex = try #require(h.transports["globex"])
        #expect(globex.requests.map(\.documentID) == ["globex-1"])
        #expect(h.transport.requests.isEmpty)
        await #expect(throws: OutboxError.otherWorkspace(id: 1, itemWorkspace: "acme", current: "globex")) { try await outbox.item(1) }

        outbox = try h.open(workspace: "acme")
        let acmeItem = try #require(try await outbox.item(1))
        #expect(acmeItem.state == .savedOnDevice)
        #expect(acmeItem.workspace == "acme")
        let report = await outbox.flush()
        #expect(report.sent == 1)
        #expect(h.transport.requests.map(\.workspace) == ["acme"])
        #expect(globex.requests.map(\.workspace) == ["globex"])
    }
}

/// Issue 32, 4: one lane per entity, whatever id it is known by.
struct EntityLaneTests {
    @Test func anOrderNamingALandedCustomerByItsServerIDWaitsBehindOneNamingItsPlaceholder() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let customer = outbox.placeholderIDs.next()
        try await outbox.enqueue(NewCustomer(name: "Café Lima", segment: .horeca), documentID: "create", creates: customer)
        try await outbox.enqueue(order(customer, sku: "A-0001"), documentID: "A")
        // The customer lands as 501; order A (sent as customer 501) meets a 503 and waits.
        h.transport.script(.done(ServerAcknowledgement(serverID: 501, version: "\"1\"")), when: { $0.documentID == "create" })
        h.transport.script(.transient(reason: "503", retryAfter: nil), when: { $0.documentID == "A" })
        _ = await outbox.flush()
        #expect(try await outbox.serverID(forPlaceholder: customer) == 501)
        #expect(h.sentDocuments == ["create", "A"])

        // The app now knows the customer as 501: an order for it must not overtake order A.
        try await outbox.enqueue(order(501, sku: "B-0001"), documentID: "B")
        _ = await outbox.flush()
        #expect(h.sentDocuments == ["create", "A"], "B overtook A, which waits to retry in the same customer's lane")
        h.clock.advance(by: 120_000)
        _ = await outbox.flush()
        #expect(h.sentDocuments == ["create", "A", "A", "B"])
        // Both went out as customer 501, in capture order.
        #expect(h.transport.requests.suffix(2).map(\.endpoint) == ["/customers/501/orders", "/customers/501/orders"])
    }

    @Test func anOrderNamingThePlaceholderAfterItLandedJoinsTheServerIDsLane() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let customer = outbox.placeholderIDs.next()
        try await outbox.enqueue(NewCustomer(name: "Ana", segment: .retail), documentID: "create", creates: customer)
        h.transport.script(.done(ServerAcknowledgement(serverID: 77, version: "\"1\"")), when: { $0.documentID == "create" })
        _ = await outbox.flush()
        try await outbox.enqueue(order(77, sku: "A-0001"), documentID: "A")
        h.transport.script(.transient(reason: "503", retryAfter: nil), when: { $0.documentID == "A" })
        _ = await outbox.flush()
        // A screen still holding the placeholder captures another order for the same customer.
        try await outbox.enqueue(order(customer, sku: "B-0001"), documentID: "B")
        _ = await outbox.flush()
        #expect(h.sentDocuments == ["create", "A"])
        h.clock.advance(by: 120_000)
        _ = await outbox.flush()
        #expect(h.sentDocuments == ["create", "A", "A", "B"])
    }
}
