import FieldForms
import Foundation
import FormSyncRuntime
import FormSyncServer
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A device process (`formsync demo-device`) killed with SIGKILL at seeded random moments while
/// it syncs, then restarted on the same outbox file, until it drains: the server must end up
/// with every document exactly once.
struct CrashTests {
    struct Offline: OutboxTransport {
        func send(_ request: OutboundRequest) async -> DeliveryOutcome { .transient(reason: "offline", retryAfterMilliseconds: nil) }
    }

    @Test func aDeviceKilledAtRandomPointsLosesNothingAndAppliesNothingTwice() async throws {
        let binary = DemoProcessTests.formsync
        try #require(FileManager.default.isExecutableFile(atPath: binary.path), "build formsync first (swift build)")
        let world = try World()
        let db = world.directory.appendingPathComponent("crashing.sqlite").path
        var documents: [String] = []
        var files = 0
        do {
            let outbox = try Outbox(path: db, workspace: "demo", forms: FormCatalog.forms, transport: Offline())
            for n in 0..<5 {
                let customer = outbox.placeholderIDs.next()
                let photo = outbox.placeholderIDs.next()
                let id = try await outbox.enqueue(
                    NewCustomer(name: "Shop \(n)", segment: .retail, shopFront: FileRef(id: photo, contentType: "image/jpeg")),
                    attachments: [.init(placeholder: photo, source: try world.file("shop\(n).jpg", bytes: 50_000), contentType: "image/jpeg")],
                    creates: customer)
                files += 1
                documents.append(try #require(try await outbox.item(id)).documentID)
                for m in 0..<5 {
                    let order = try await outbox.enqueue(salesOrder(customer: customer, lines: 1 + m * 7, marker: "s\(n)-o\(m)"))
                    documents.append(try #require(try await outbox.item(order)).documentID)
                }
            }
        }
        world.server.faults.add(.dropAfterCommit, count: 5)
        world.server.faults.add(.delay(milliseconds: 300), count: 5)

        var seed = UInt64(20261130)  // the kill moments are seeded, so a failure can be replayed
        func device() throws -> Process {
            let process = Process()
            process.executableURL = binary
            process.arguments = ["demo-device", "--db", db, "--server", world.server.baseURL.absoluteString, "--refresh-token", world.refreshToken]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
        var kills = 0
        for _ in 0..<5 {
            let process = try device()
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            try await Task.sleep(for: .milliseconds(100 + Int(seed >> 33) % 500))
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                kills += 1
            }
            process.waitUntilExit()
        }
        let last = try device()
        let deadline = Date().addingTimeInterval(45)
        while last.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(100)) }
        #expect(!last.isRunning)
        if last.isRunning { last.terminate() }
        #expect(last.terminationStatus == 0)

        #expect(kills >= 1)
        let held = world.server.documents()
        #expect(held.count == documents.count)
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
