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

/// A device process pulling its records (`formsync demo-device --pull-only`) is SIGKILLed at
/// several points of the feed (while a page is on its way, and at seeded random moments, which
/// land in commits too), while the back office keeps changing, moving and deleting records. When
/// it finally catches up, its store must equal the server's scope exactly: nothing missing,
/// nothing stale, nothing from another courier.
struct PullCrashTests {
    @Test func aDeviceKilledMidPullResumesWithNothingMissingAndNothingRepeated() async throws {
        try await OffThePool.run {
            let binary = DemoProcessTests.formsync
            try #require(FileManager.default.isExecutableFile(atPath: binary.path), "build formsync first (swift build)")
            let world = try World()
            var random = SplitMix64(state: 20_261_130)
            var ada: [Delivery] = []
            var bob: [Delivery] = []
            for n in 0..<1200 {
                ada.append(
                    try world.server.putRecord(
                        Delivery(courierId: "ada", status: .assigned, stopOrder: n + 1, address: "Rua \(n)"), workspace: "acme"))
            }
            for n in 0..<300 {
                bob.append(
                    try world.server.putRecord(
                        Delivery(courierId: "bob", status: .assigned, stopOrder: n + 1, address: "Avenida \(n)"), workspace: "acme"))
            }
            for n in 0..<200 { _ = try world.server.putRecord(Customer(name: "Shop \(n)", segment: .retail), workspace: "acme") }

            let refreshToken = try world.server.issueRefreshToken(principal: "ada", workspaces: ["acme"])
            let db = world.directory.appendingPathComponent("pulling.sqlite").path
            var logs: [URL] = []
            func device() throws -> ChildProcess {
                let log = world.directory.appendingPathComponent("pull-\(logs.count).log")
                logs.append(log)
                return try ChildProcess(
                    binary.path,
                    [
                        "demo-device", "--pull-only", "--db", db, "--server", world.server.baseURL.absoluteString, "--refresh-token",
                        refreshToken,
                        "--workspace", "acme", "--page-size", "40", "--timeout", "5", "--deadline", "3600",
                    ],
                    standardOutput: .file(log.path), standardError: .file(log.path))
            }
            /// The back office at work while the device is down.
            func backOffice() throws {
                for _ in 0..<15 {
                    var changed = ada[Int(random.next() % UInt64(ada.count))]
                    changed.address = "Rua \(random.next() % 10_000), changed"
                    ada[ada.firstIndex { $0.id == changed.id }!] = try world.server.putRecord(changed, workspace: "acme")
                }
                for _ in 0..<4 {
                    let gone = ada.remove(at: Int(random.next() % UInt64(ada.count)))
                    try world.server.deleteRecord("Delivery", id: gone.id, workspace: "acme")
                }
                var toBob = ada.remove(at: Int(random.next() % UInt64(ada.count)))
                toBob.courierId = "bob"
                bob.append(try world.server.putRecord(toBob, workspace: "acme"))
                var toAda = bob.remove(at: Int(random.next() % UInt64(bob.count)))
                toAda.courierId = "ada"
                ada.append(try world.server.putRecord(toAda, workspace: "acme"))
                ada.append(
                    try world.server.putRecord(
                        Delivery(courierId: "ada", status: .assigned, address: "New \(random.next() % 1000)"), workspace: "acme"))
            }

            // Kills while a page is on its way: when the server has made page N, before it is sent.
            let victim = Mutex<(process: ChildProcess?, at: Int, kills: Int)>((nil, 0, 0))
            world.server.afterFeedPage = { pages in
                victim.withLock { state in
                    guard let process = state.process, process.isRunning, pages >= state.at else { return }
                    process.signal(SIGKILL)
                    state.kills += 1
                    state.process = nil
                }
            }
            var served = 0
            for step in [3, 5, 4, 6] {
                served += step
                let process = try device()
                victim.withLock {
                    $0.process = process
                    $0.at = served
                }
                // Its end is what is waited for (a hang is the test watchdog's to report).
                if process.waitUntilExit() != .signal(SIGKILL) {
                    Issue.record("the device caught up without being killed at \(served) pages")
                }
                try backOffice()
            }
            world.server.afterFeedPage = nil
            #expect(victim.withLock { $0.kills } == 4)

            // Kills at seeded moments: a process start and a page or two in, often mid-commit.
            for _ in 0..<3 {
                let process = try device()
                try await Task.sleep(for: .milliseconds(Int(150 + random.next() % 200)))
                if process.isRunning { process.signal(SIGKILL) }
                process.waitUntilExit()
                try backOffice()
            }

            let last = try device()
            let lastLog = (try? String(contentsOf: logs.last!, encoding: .utf8)) ?? ""
            #expect(last.waitUntilExit() == .exit(0), "\(lastLog)")

            let reader = try Outbox(
                path: db, forms: FormCatalog.forms, records: FormCatalog.records,
                transport: world.transport(workspace: "acme", principal: "ada"))
            let deliveries = try await reader.records(Delivery.all)
            let expected = Dictionary(uniqueKeysWithValues: ada.map { ($0.id, $0) })
            #expect(deliveries.count == expected.count)
            #expect(Set(deliveries.map(\.id)) == Set(expected.keys))
            for delivery in deliveries { #expect(delivery == expected[delivery.id], "Delivery \(delivery.id) differs from the server's") }
            #expect(deliveries.allSatisfy { $0.courierId == "ada" })
            #expect(try await reader.records(Customer.all).count == 200)
            #expect(try await reader.records(Delivery.byStatus(.assigned)).count == expected.count)
        }
    }
}
