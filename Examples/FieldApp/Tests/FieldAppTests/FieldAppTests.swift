import FieldAppForms
import FormSyncClient
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

/// The app's own test, with FormSync's test double instead of a server.
@Test func aVisitIsValidatedAndQueuedWithoutAServer() async throws {
    let transport = ScriptedTransport(workspace: "pest")
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("fieldapp-\(UUID().uuidString).sqlite").path
    let outbox = try Outbox(path: path, forms: FormCatalog.forms, records: FormCatalog.records, transport: transport)
    await #expect(throws: OutboxError.self) { try await outbox.enqueue(PestControlVisit(site: "nope", rodentsSeen: false)) }
    try await outbox.enqueue(PestControlVisit(site: "LIS-001", rodentsSeen: false))
    #expect(await outbox.flush().sent == 1)
    #expect(transport.requests.first?.endpoint == "/sites/LIS-001/pest-visits")
}
