import EvolutionV1
import EvolutionV2
import EvolutionV3
import EvolutionV4
import FormSpec
import FormSyncClient
import FormSyncInterpreter
import FormSyncModel
import FormSyncServer
import FormSyncTesting
import FormSyncTorture
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A form evolving through four versions, each compiled as its own app build (Tests/Evolution):
/// an outbox holding items of versions 1–3 opened by build 4, a server speaking every version
/// at once, a future version refused, and `formsync serve --specs` on specs from elsewhere.
struct SpecEvolutionEndToEndTests {
    final class Fixture: @unchecked Sendable {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("evolution-\(UUID().uuidString)")
        let server: SyncServer
        let token: String

        init(forms: [any FormPayload.Type]) throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            server = try TestStore.server(directory: directory.appendingPathComponent("server").path, forms: forms)
            _ = try server.start()
            token = try server.issueAccessToken(workspaces: ["field"])
        }

        deinit {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }

        /// The device's outbox, opened by a build that knows `forms`.
        func device(_ forms: [any FormPayload.Type]) throws -> Outbox {
            let token = self.token
            let transport = HTTPTransport(workspace: "field", baseURL: server.baseURL, timeout: .seconds(120)) { token }
            return try Outbox(path: directory.appendingPathComponent("device.sqlite").path, forms: forms, transport: transport)
        }
    }

    @Test func itemsOfVersionsOneToThreeAreSentByBuildFourUpgradedOrParkedForTheOneFieldAPersonMustFill() async throws {
        let fixture = try Fixture(forms: [EvolutionV4.Visit.self])
        // Build 1 queues two visits; build 2 one; build 3 two. None is sent: no signal all week.
        var queued: [String: ItemID] = [:]
        do {
            let outbox = try Outbox(
                path: fixture.directory.appendingPathComponent("device.sqlite").path, forms: [EvolutionV1.Visit.self],
                transport: Unreachable())
            queued["v1-done"] = try await outbox.enqueue(
                EvolutionV1.Visit(
                    site: "LIS-1", outcome: .partial, note: "gate stuck", fax: "+351 21", amount: Money(minorUnits: 900, currency: "EUR")))
            queued["v1-missed"] = try await outbox.enqueue(EvolutionV1.Visit(site: "LIS-2", outcome: .missed, note: "nobody home"))
        }
        do {
            let outbox = try Outbox(
                path: fixture.directory.appendingPathComponent("device.sqlite").path, forms: [EvolutionV2.Visit.self],
                transport: Unreachable())
            queued["v2-done"] = try await outbox.enqueue(EvolutionV2.Visit(site: "LIS-3", outcome: .done, remarks: "all fine"))
        }
        do {
            let outbox = try Outbox(
                path: fixture.directory.appendingPathComponent("device.sqlite").path, forms: [EvolutionV3.Visit.self],
                transport: Unreachable())
            queued["v3-high"] = try await outbox.enqueue(EvolutionV3.Visit(site: "LIS-4", outcome: .done, priority: .high))
            queued["v3-missed"] = try await outbox.enqueue(EvolutionV3.Visit(site: "LIS-5", outcome: .missed, priority: .low))
        }
        // The app updates to build 4, and the signal comes back.
        let outbox = try fixture.device([EvolutionV4.Visit.self])
        let report = await outbox.flush()
        #expect(report.sent == 3)
        #expect(report.rejected == 2)
        let held = Dictionary(
            uniqueKeysWithValues: try fixture.server.documents().map { doc in
                (
                    try JSONDecoder().decode(EvolutionV4.Visit.self, from: doc.payload).site ?? "",
                    (doc, try JSONDecoder().decode(EvolutionV4.Visit.self, from: doc.payload))
                )
            })
        #expect(held.count == 3)
        let first = try #require(held["LIS-1"])
        #expect(first.0.formVersion == 4)
        #expect(first.1.outcome == .done)  // partial → done
        #expect(first.1.remarks == "gate stuck")  // note → remarks
        #expect(first.1.priority == .normal)  // the default
        #expect(!String(decoding: first.0.payload, as: UTF8.self).contains("fax"))  // dropped
        #expect(held["LIS-3"]?.1.priority == .normal)
        #expect(held["LIS-4"]?.1.priority == .high)

        // The missed visits need a date no upgrader can know: parked, with the field to fill.
        let parked = try await outbox.items(in: [.rejected])
        #expect(Set(parked.map(\.id)) == [queued["v1-missed"]!, queued["v3-missed"]!])
        for item in parked {
            #expect(item.fieldErrors.map(\.pointer) == ["#/rescheduled_to"])
            #expect(item.formVersion == 4)
            var fixed = try JSONDecoder().decode(EvolutionV4.Visit.self, from: try #require(item.payload))
            fixed.rescheduledTo = LocalDate("2026-12-07")
            try await outbox.resubmit(item.id, with: fixed)
        }
        let second = await outbox.flush()
        #expect(second.sent == 2)
        #expect(fixture.server.documents().count == 5)
        #expect(fixture.server.documents().allSatisfy { $0.formVersion == 4 && $0.appliedWrites == 1 })
        let lis2 = fixture.server.documents().compactMap { try? JSONDecoder().decode(EvolutionV4.Visit.self, from: $0.payload) }.first {
            $0.site == "LIS-2"
        }
        #expect(lis2?.remarks == "nobody home")
    }

    @Test func aServerSpeaksVersionsThreeAndFourAtOnceAndRefusesAFutureOne() async throws {
        let fixture = try Fixture(forms: [EvolutionV4.Visit.self])
        // A device still on build 3 and one on build 4 send to the same server.
        let old = try Outbox(
            path: fixture.directory.appendingPathComponent("old.sqlite").path, forms: [EvolutionV3.Visit.self],
            transport: HTTPTransport(workspace: "field", baseURL: fixture.server.baseURL) { [token = fixture.token] in token })
        let new = try Outbox(
            path: fixture.directory.appendingPathComponent("new.sqlite").path, forms: [EvolutionV4.Visit.self],
            transport: HTTPTransport(workspace: "field", baseURL: fixture.server.baseURL) { [token = fixture.token] in token })
        try await old.enqueue(EvolutionV3.Visit(site: "OLD-1", outcome: .done, priority: .low))
        try await new.enqueue(EvolutionV4.Visit(site: "NEW-1", outcome: .missed, priority: .high, rescheduledTo: LocalDate("2026-12-01")))
        #expect(await old.flush().sent == 1)
        #expect(await new.flush().sent == 1)
        #expect(fixture.server.documents().map(\.formVersion) == [4, 4])

        // A server still on version 3 meets a build-4 device: a clear 422, parked, nothing lost.
        let behind = try Fixture(forms: [EvolutionV3.Visit.self])
        let ahead = try Outbox(
            path: behind.directory.appendingPathComponent("ahead.sqlite").path, forms: [EvolutionV4.Visit.self],
            transport: HTTPTransport(workspace: "field", baseURL: behind.server.baseURL) { [token = behind.token] in token })
        let id = try await ahead.enqueue(EvolutionV4.Visit(site: "NEW-2", outcome: .done, priority: .normal))
        #expect(await ahead.flush().rejected == 1)
        let item = try #require(try await ahead.item(id))
        #expect(item.lastError?.contains("version 4 is newer than this server knows") == true)
        #expect(behind.server.documents().isEmpty)
    }

    @Test func serveSpecsServesAFolderOfSpecsThatAreNotInThisRepository() async throws {
        try await OffThePool.run {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("app-specs-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            try """
            form: PestControlVisit
            version: 2
            endpoint: /sites/{site}/pest-visits
            entity: site
            upgrades:
              1: { rename: { bait: baits_checked } }
            fields:
              site: { type: text, required: true, pattern: "[A-Z]{3}-[0-9]{3}" }
              baits_checked: { type: integer, min: 0, max: 40, required: true }
              rodents_seen: boolean
            """.write(to: folder.appendingPathComponent("PestControlVisit.yaml"), atomically: true, encoding: .utf8)
            let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("formsync")
            try #require(FileManager.default.isExecutableFile(atPath: binary.path), "build formsync first (swift build)")
            let process = try ChildProcess(
                binary.path, ["serve", "--port", "0", "--db", folder.appendingPathComponent("db").path, "--specs", folder.path],
                standardOutput: .pipe)
            defer {
                process.signal()
                process.waitUntilExit()
            }
            try #require(process.output != nil)
            // The whole banner (this test runs off the pool, so the blocking read holds none of its threads).
            let text = process.readOutput(until: "access token:")
            #expect(text.contains("forms: PestControlVisit v2"))
            let url = try #require(
                text.split(separator: "\n").first { $0.hasPrefix("FormSync reference server on ") }.map {
                    String($0.dropFirst("FormSync reference server on ".count))
                })
            let token = try #require(
                text.split(separator: "\n").first { $0.hasPrefix("access token:") }.map {
                    $0.split(separator: " ").last.map(String.init) ?? ""
                }
            )
            func post(
                _ body: String, version: Int, key: String, path: String = "/sites/ABC-123/pest-visits"
            ) async throws -> (Int, [String: Any]) {
                var request = URLRequest(url: URL(string: url + path)!)
                request.httpMethod = "POST"
                request.httpBody = Data(body.utf8)
                for (name, value) in [
                    "Authorization": "Bearer \(token)", "FormSync-Workspace": "default", "Idempotency-Key": key, "FormSync-Document": key,
                    "FormSync-Form": "PestControlVisit; version=\(version)", "Content-Type": "application/json",
                ] {
                    request.setValue(value, forHTTPHeaderField: name)
                }
                let (data, response) = try await URLSession.shared.data(for: request)
                return ((response as! HTTPURLResponse).statusCode, (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:])
            }
            let created = try await post(#"{"site":"ABC-123","baits_checked":12}"#, version: 2, key: "k1")
            #expect(created.0 == 201)
            let upgraded = try await post(#"{"site":"ABC-123","bait":7,"rodents_seen":true}"#, version: 1, key: "k2")
            #expect(upgraded.0 == 201)
            #expect((upgraded.1["record"] as? [String: Any])?["baits_checked"] as? Int == 7)
            let invalid = try await post(#"{"site":"ABC-123","baits_checked":99}"#, version: 2, key: "k3")
            #expect(invalid.0 == 422)
            #expect((invalid.1["errors"] as? [[String: Any]])?.first?["pointer"] as? String == "#/baits_checked")
            let future = try await post(#"{"site":"ABC-123","baits_checked":1}"#, version: 3, key: "k4")
            #expect(future.0 == 422)
            #expect(future.1["code"] as? String == "unknown-form-version")
        }
    }
}

/// A device with no signal at all.
struct Unreachable: OutboxTransport {
    var workspace = "field"
    func send(_ request: OutboundRequest) async -> DeliveryOutcome { .unreachable(reason: "no signal") }
    func probe() async -> Bool { false }
}
