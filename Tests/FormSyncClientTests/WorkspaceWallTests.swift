import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

/// A workspace (server + tenant) is a wall: its items, placeholders and server ids never cross.
struct WorkspaceWallTests {
    @Test func everyByIDActionRefusesAnotherWorkspacesItem() async throws {
        let h = try Harness()
        let outbox = try h.open(workspace: "acme")
        let id = try await outbox.enqueue(order(1))
        h.transport.script(.rejected(reason: "no", fieldErrors: []))
        _ = await outbox.flush()
        try await outbox.switchWorkspace(to: "globex")
        let refusal = OutboxError.otherWorkspace(id: id, itemWorkspace: "acme", current: "globex")
        await #expect(throws: refusal) { try await outbox.item(id) }
        await #expect(throws: refusal) { try await outbox.retry(id) }
        await #expect(throws: refusal) { try await outbox.resubmit(id, with: order(1, quantity: 2)) }
        await #expect(throws: refusal) { try await outbox.resolveConflict(id, with: order(1)) }
        await #expect(throws: refusal) { try await outbox.discard(id) }
        try await outbox.switchWorkspace(to: "acme")
        #expect(try await outbox.item(id)?.state == .rejected)
    }

    @Test func aWorkspaceWithoutItsOwnTransportCannotBeEntered() async throws {
        let h = try Harness()
        let outbox = try h.open(workspace: "acme")
        await #expect(throws: OutboxError.noTransport(workspace: "initech")) { try await outbox.switchWorkspace(to: "initech") }
        #expect(await outbox.workspace == "acme")
        // A single-transport outbox serves the transport's workspace only.
        let single = try Outbox(path: h.path, forms: Harness.forms, transport: ScriptedTransport(workspace: "acme"))
        await #expect(throws: OutboxError.noTransport(workspace: "globex")) { try await single.switchWorkspace(to: "globex") }
    }

    @Test func placeholdersAndTheirServerIDsAreScopedToTheirWorkspace() async throws {
        let h = try Harness()
        let outbox = try h.open(workspace: "acme")
        let customer = outbox.placeholderIDs.next()
        try await outbox.enqueue(NewCustomer(name: "Acme shop", segment: .retail), creates: customer)
        #expect(await outbox.flush().sent == 1)
        try await outbox.switchWorkspace(to: "globex")
        // Globex never created that customer: its placeholder (and acme's server id) mean nothing here.
        await #expect(throws: OutboxError.unknownPlaceholder(customer)) { try await outbox.enqueue(order(customer)) }
        let pending = outbox.placeholderIDs.next()
        try await switchAndEnqueue(outbox, creates: pending)
        await #expect(throws: OutboxError.unknownPlaceholder(pending)) { try await outbox.enqueue(order(pending)) }
        #expect(try await outbox.items(in: Set(SyncState.allCases)).isEmpty)
    }

    /// Captures a customer in acme (not sent), then returns to globex.
    private func switchAndEnqueue(_ outbox: Outbox, creates placeholder: Int64) async throws {
        try await outbox.switchWorkspace(to: "acme")
        try await outbox.enqueue(NewCustomer(name: "Another", segment: .retail), creates: placeholder)
        try await outbox.switchWorkspace(to: "globex")
    }

    @Test func aTransportRefusesARequestOfAnotherWorkspace() async throws {
        let transport = ScriptedTransport(workspace: "acme")
        let outcome = await transport.send(
            OutboundRequest(
                itemID: 1, documentID: "d", attemptID: "a", workspace: "globex",
                body: .submission(form: "SalesOrder", version: 1, endpoint: "/x", payload: Data("{}".utf8), baseVersion: nil)))
        guard case .rejected = outcome else {
            Issue.record("sent across the wall: \(outcome)")
            return
        }
        #expect(transport.requests.isEmpty)
    }
}
