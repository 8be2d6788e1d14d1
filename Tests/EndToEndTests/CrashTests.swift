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
        world.server.faults.add(.dropAfterCommit, count: 3)
        world.server.faults.add(.delay(milliseconds: 150), count: 30)  // slow enough that the kills land mid-sync

        var seed = UInt64(20261130)  // the kill moments are seeded, so a failure can be replayed
        var logs: [URL] = []
        func device() throws -> Process {
            let process = Process()
            process.executableURL = binary
            process.arguments = ["demo-device", "--db", db, "--server", world.server.baseURL.absoluteString, "--refresh-token", world.refreshToken]
            let log = world.directory.appendingPathComponent("device-\(UUID().uuidString).log")
            FileManager.default.createFile(atPath: log.path, contents: nil)
            let handle = try FileHandle(forWritingTo: log)
            process.standardOutput = handle
            process.standardError = handle
            logs.append(log)
            try process.run()
            return process
        }
        // Kill it mid-sync four times: each time once the server holds a few more documents (so
        // the kill lands while work remains), after a seeded extra moment.
        var kills = 0
        for threshold in [3, 9, 15, 21] {
            let process = try device()
            let until = Date().addingTimeInterval(15)
            while process.isRunning, world.server.documents().count < threshold, Date() < until {
                try await Task.sleep(for: .milliseconds(5))
            }
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            try await Task.sleep(for: .milliseconds(Int(seed >> 33) % 40))
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                kills += 1
            } else {
                let text = (try? String(contentsOf: logs.last!, encoding: .utf8)) ?? ""
                Issue.record("the device exited (\(process.terminationStatus)) before the kill at \(threshold) documents, server holds \(world.server.documents().count):\n\(text)")
            }
            process.waitUntilExit()
        }
        let last = try device()
        let deadline = Date().addingTimeInterval(45)
        while last.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(100)) }
        #expect(!last.isRunning)
        if last.isRunning { last.terminate() }
        #expect(last.terminationStatus == 0)

        #expect(kills >= 3)
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
