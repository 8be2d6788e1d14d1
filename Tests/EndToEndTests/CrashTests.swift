import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import FormSyncTesting
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A device process (`formsync demo-device`) killed with SIGKILL at seeded random moments while
/// it syncs, then restarted on the same outbox file, until it drains: the server must end up
/// with every document exactly once.
struct CrashTests {
    struct Offline: OutboxTransport {
        let workspace = "demo"
        func send(_ request: OutboundRequest) async -> DeliveryOutcome { .unreachable(reason: "offline") }
        func probe() async -> Bool { false }
    }

    @Test func aDeviceKilledAtRandomPointsLosesNothingAndAppliesNothingTwice() async throws {
        try await OffThePool.run {
            let binary = DemoProcessTests.formsync
            try #require(FileManager.default.isExecutableFile(atPath: binary.path), "build formsync first (swift build)")
            let world = try World()
            let db = world.directory.appendingPathComponent("crashing.sqlite").path
            var documents: [String] = []
            var files = 0
            do {
                let outbox = try Outbox(path: db, forms: FormCatalog.forms, transport: Offline())
                for n in 0..<5 {
                    let customer = outbox.placeholderIDs.next()
                    let photo = outbox.placeholderIDs.next()
                    let id = try await outbox.enqueue(
                        NewCustomer(name: "Shop \(n)", segment: .retail, shopFront: FileRef(id: photo, contentType: "image/jpeg")),
                        attachments: [
                            .init(placeholder: photo, source: try world.file("shop\(n).jpg", bytes: 50_000), contentType: "image/jpeg")
                        ],
                        creates: customer)
                    files += 1
                    documents.append(try #require(try await outbox.item(id)).documentID)
                    for m in 0..<5 {
                        let order = try await outbox.enqueue(salesOrder(customer: customer, lines: 1 + m * 7, marker: "s\(n)-o\(m)"))
                        documents.append(try #require(try await outbox.item(order)).documentID)
                    }
                }
            }
            world.server.faults.add(.dropAfterCommit, count: 3)

            var seed = UInt64(20_261_130)  // the kill moments are seeded, so a failure can be replayed
            var logs: [URL] = []
            func device() throws -> ChildProcess {
                let log = world.directory.appendingPathComponent("device-\(UUID().uuidString).log")
                logs.append(log)
                return try ChildProcess(
                    binary.path,
                    [
                        "demo-device", "--db", db, "--server", world.server.baseURL.absoluteString, "--refresh-token", world.refreshToken,
                        "--timeout", "2", "--lease-ms", "2500", "--deadline", "3600",
                    ],
                    standardOutput: .file(log.path), standardError: .file(log.path))
            }
            // Kill it mid-sync four times, each at the moment the server commits a seeded document
            // count, before the reply goes out: the device dies with requests on the wire.
            let victim = Mutex<(process: ChildProcess?, at: Int, kills: Int)>((nil, 0, 0))
            world.server.afterCommit = { documents in
                victim.withLock { state in
                    guard let process = state.process, process.isRunning, documents >= state.at else { return }
                    process.signal(SIGKILL)
                    state.kills += 1
                    state.process = nil
                }
            }
            var thresholds: [Int] = []
            for round in 0..<4 {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                thresholds.append(1 + round * 7 + Int(seed >> 33) % 6)
            }
            for threshold in thresholds {
                let process = try device()
                victim.withLock {
                    $0.process = process
                    $0.at = threshold
                }
                // Its end is what is waited for (a hang is the test watchdog's to report): killed at
                // its threshold, or, a failure, drained without being killed.
                if process.waitUntilExit() != .signal(SIGKILL) {
                    let text = (try? String(contentsOf: logs.last!, encoding: .utf8)) ?? ""
                    Issue.record(
                        "the device was not killed at \(threshold) documents (server holds \(world.server.documents().count)):\n\(text)")
                }
            }
            world.server.afterCommit = nil
            let kills = victim.withLock { $0.kills }
            let last = try device()
            #expect(last.waitUntilExit() == .exit(0), "\((try? String(contentsOf: logs.last!, encoding: .utf8)) ?? "")")

            #expect(kills == 4)
            let held = world.server.documents()
            #expect(held.count == documents.count, "\((try? String(contentsOf: logs.last!, encoding: .utf8)) ?? "")")
            #expect(Set(held.map(\.documentID)) == Set(documents))
            #expect(held.allSatisfy { $0.appliedWrites == 1 })
            #expect(world.server.fileIDs().count == files)
            let customers = Dictionary(uniqueKeysWithValues: held.filter { $0.form == "NewCustomer" }.map { ($0.id, $0) })
            for order in held where order.form == "SalesOrder" {
                let decoded = try JSONDecoder().decode(SalesOrder.self, from: order.payload)
                #expect(customers[try #require(decoded.customerId).id] != nil)  // a real customer id, never a placeholder
            }
        }
    }
}
