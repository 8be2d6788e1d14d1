import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

/// A temporary outbox database with a hand-moved clock, sequential identities, a fixed random
/// source and a scripted transport. `open()` can be called again to reopen the same file, as a
/// restarted app would.
final class Harness: @unchecked Sendable {
    let directory: URL
    let path: String
    let clock = ManualClock(1_800_000_000_000)
    let ids = SequentialIDs(prefix: "id")
    /// The transport of each workspace; `transport` is acme's.
    let transports = ["acme": ScriptedTransport(workspace: "acme"), "globex": ScriptedTransport(workspace: "globex")]
    var transport: ScriptedTransport { transports["acme"]! }
    var configuration = Outbox.Configuration(
        concurrency: 4, retry: RetryPolicy(baseDelay: .milliseconds(1000), maxDelay: .milliseconds(60_000), maxAttempts: 5),
        lease: .milliseconds(30_000))
    var randomValue = 0.5
    var refresh: @Sendable () async -> Bool = { true }
    /// Replaces the fsync of the outbox's log (a disk that can lose power, `PowerCutDisk`).
    var syncLog: (@Sendable (Int32) -> Int32)?

    static let forms: [any FormPayload.Type] = [DeliveryConfirmation.self, SiteInspection.self, SalesOrder.self, NewCustomer.self]

    private let watch = TestRunWatchdog.enter(Test.current?.name ?? "?")

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("outbox.sqlite").path
    }

    deinit {
        TestRunWatchdog.leave(watch)
        try? FileManager.default.removeItem(at: directory)
    }

    func open(workspace: String = "acme") throws -> Outbox {
        let clock = self.clock
        let ids = self.ids
        let random = randomValue
        var environment = OutboxEnvironment(now: { clock.now }, random: { random }, newID: { ids.next() })
        if let syncLog { environment.syncLog = syncLog }
        return try Outbox(
            path: path, workspace: workspace, forms: Self.forms, transports: { [transports] in transports[$0] },
            configuration: configuration,
            environment: environment, refreshAuthentication: refresh)
    }

    /// The outbox with every form and record type of the catalogue (what pulls and record
    /// reads need), on this harness's clock, identities and transports.
    func openWithRecords() throws -> Outbox {
        let clock = self.clock
        let ids = self.ids
        return try Outbox(
            path: path, workspace: "acme", forms: FormCatalog.forms, records: FormCatalog.records,
            transports: { [transports] in transports[$0] }, configuration: configuration,
            environment: OutboxEnvironment(now: { clock.now }, random: { 0.5 }, newID: { ids.next() }))
    }

    /// A file on disk to attach, as the camera would leave it.
    func cameraFile(_ name: String, bytes: Int = 1000) throws -> URL {
        let url = directory.appendingPathComponent(name)
        try MediaSignature.stamped(Data((0..<bytes).map { UInt8($0 % 251) }), asFileNamed: name).write(to: url)
        return url
    }

    /// Document ids of the submissions the transport saw, in order.
    var sentDocuments: [String] {
        transport.requests.filter { !$0.isFileUpload }.map(\.documentID)
    }
}

/// A valid sales order for `customer` (its lane is `Customer:<customer>`).
func order(_ customer: Int64, sku: String = "AB-1234", quantity: Int = 1) -> SalesOrder {
    SalesOrder(
        customerId: EntityRef(customer), orderDate: LocalDate("2026-11-30"),
        lines: [.init(sku: sku, quantity: quantity, unitPrice: Money(minorUnits: 250, currency: "EUR"))])
}

/// Enqueues `perCustomer` orders for each of `customers` (one lane each), documents
/// `c<customer>-<n>`, in capture order.
func enqueueLanes(_ outbox: Outbox, customers: Int, perCustomer: Int) async throws {
    for customer in 1...customers {
        for n in 1...perCustomer { try await outbox.enqueue(order(Int64(customer)), documentID: "c\(customer)-\(n)") }
    }
}

/// Expects each customer's documents (`enqueueLanes`) on the wire in capture order.
func expectLaneOrder(_ h: Harness, customers: Int, perCustomer: Int) {
    for customer in 1...customers {
        #expect(h.sentDocuments.filter { $0.hasPrefix("c\(customer)-") } == (1...perCustomer).map { "c\(customer)-\($0)" })
    }
}

/// Waits (briefly, in real time) until `condition` holds; records an issue if it never does.
func eventually(_ what: String = "condition", _ condition: () async -> Bool) async {
    for _ in 0..<400 {
        if await condition() { return }
        try? await Task.sleep(for: .milliseconds(5))
    }
    Issue.record("timed out waiting for \(what)")
}
