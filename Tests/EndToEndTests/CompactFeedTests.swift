import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncProtocol
import FormSyncServer
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The reference server's compact pages (`compact-feed`, docs/PROTOCOL.md "Compact pages"): the
/// same page as JSON, up to 10,000 changes or past 8 MiB of records, and JSON for a request that
/// does not accept them; a device pulls through them.
@Suite(.serialized)
struct CompactFeedTests {
    static func get(_ world: World, _ path: String, accept: String?, token: String) async throws -> (Int, String, Data) {
        var request = URLRequest(url: URL(string: world.server.baseURL.absoluteString + path)!)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue("acme", forHTTPHeaderField: "FormSync-Workspace")
        if let accept { request.setValue(accept, forHTTPHeaderField: "Accept") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        return (http.statusCode, http.value(forHTTPHeaderField: "Content-Type") ?? "", data)
    }

    /// A delivery of about 900 bytes of JSON.
    static func delivery(_ n: Int, courier: String = "ada") -> Delivery {
        Delivery(
            courierId: courier, status: .assigned, stopOrder: n + 1,
            address: String(repeating: "Rua \(n) ", count: 40).prefix(200).description,
            recipient: String(repeating: "R", count: 120),
            notes: String(repeating: "leave at the door; ", count: 26).prefix(500).description)
    }

    static func seed(_ world: World, count: Int, courier: String = "ada") throws {
        try world.server.putRecords(
            try (0..<count).map {
                SyncServer.RecordSeed(type: "Delivery", fields: try FormRegistry.encode(delivery($0, courier: courier)), workspace: "acme")
            })
    }

    @Test func aCompactPageHoldsTheSameChangesAsTheJSONPageWithEachRecordsStoredBytes() async throws {
        let world = try World()
        try Self.seed(world, count: 5)
        try Self.seed(world, count: 2, courier: "bob")
        let first = try #require(world.server.records(workspace: "acme").filter { $0.scope == "ada" }.min { $0.id < $1.id })
        try world.server.deleteRecord("Delivery", id: first.id, workspace: "acme")
        _ = try world.server.putRecord(Customer(name: "Shop", segment: .retail), workspace: "acme")
        let token = try world.server.issueAccessToken(principal: "ada", workspaces: ["acme"])

        let (jsonStatus, jsonType, jsonBody) = try await Self.get(world, "/changes?limit=5", accept: nil, token: token)
        let (status, type, body) = try await Self.get(world, "/changes?limit=5", accept: CompactFeedPage.mediaType, token: token)
        #expect(jsonStatus == 200 && status == 200)
        #expect(jsonType.hasPrefix("application/json") && type == CompactFeedPage.mediaType)
        let json = try #require(try JSONSerialization.jsonObject(with: jsonBody) as? [String: Any])
        let page = try #require(CompactFeedPage.read(body, limit: CompactFeedPage.maxChanges))
        let envelope = try #require(try JSONSerialization.jsonObject(with: page.envelope) as? [String: Any])
        #expect(envelope["cursor"] as? String == json["cursor"] as? String)
        #expect(envelope["more"] as? Bool == true && json["more"] as? Bool == true)
        #expect(envelope["remaining"] as? Int == json["remaining"] as? Int)
        #expect((envelope["changes"] as? [Any])?.isEmpty == true)
        let changes = try #require(json["changes"] as? [[String: Any]])
        #expect(page.frames.count == 5 && changes.count == 5)
        let stored = Dictionary(uniqueKeysWithValues: world.server.records(workspace: "acme").map { ($0.id, $0) })
        for (frame, change) in zip(page.frames, changes) {
            #expect(frame.type == change["type"] as? String)
            #expect(frame.id == (change["id"] as? NSNumber)?.int64Value)
            if change["deleted"] as? Bool == true {
                #expect(frame.kind == .deleted && frame.record == nil)
            } else {
                #expect(frame.kind == .state)
                #expect(Int(frame.version) == change["version"] as? Int)
                let record = try #require(frame.record)
                #expect(body[record] == stored[frame.id]?.fields, "the record's stored bytes, unchanged")
            }
        }
        // The whole scope: four states, the deletion, the customer. (Which of the last two comes
        // first depends on the store: PostgreSQL numbers changes written together by record id.)
        let (_, _, whole) = try await Self.get(world, "/changes?limit=10", accept: CompactFeedPage.mediaType, token: token)
        let all = try #require(CompactFeedPage.read(whole, limit: CompactFeedPage.maxChanges))
        #expect(all.frames.count == 6)
        #expect(all.frames.contains { $0.kind == .deleted && $0.id == first.id && $0.record == nil })
    }

    @Test(arguments: [
        nil, "application/json", "\(CompactFeedPage.mediaType);q=0, application/json", "\(CompactFeedPage.mediaType); q=0.000",
        "application/vnd.formsync.feedx",
        // An absurd header (past 1 KiB) is not searched for it.
        String(repeating: "text/x-filler, ", count: 80) + CompactFeedPage.mediaType,
    ])
    func aRequestThatDoesNotAcceptTheCompactFormGetsJSON(accept: String?) async throws {
        let world = try World()
        try Self.seed(world, count: 2)
        let token = try world.server.issueAccessToken(principal: "ada", workspaces: ["acme"])
        let (status, type, body) = try await Self.get(world, "/changes", accept: accept, token: token)
        #expect(status == 200 && type.hasPrefix("application/json"))
        #expect((try JSONSerialization.jsonObject(with: body) as? [String: Any])?["changes"].flatMap { $0 as? [Any] }?.count == 2)
        // Accepted among others, with a weight, it is chosen.
        let (_, chosen, _) = try await Self.get(
            world, "/changes", accept: "application/json;q=0.9, \(CompactFeedPage.mediaType);q=0.5", token: token)
        #expect(chosen == CompactFeedPage.mediaType)
    }

    /// 10,001 records of about 900 bytes: a page asked for 20,000 holds 1,000 as JSON, and as a
    /// compact page stops after the change that takes it past 8 MiB; a device pulls them in
    /// three compact pages (its first page small, then pages of its default size, 5,000), where
    /// JSON pages would take eleven, and holds what the server holds.
    @Test func aCompactPageStopsPastItsByteBoundAndADevicePullsThroughThem() async throws {
        let world = try World()
        try Self.seed(world, count: 10_001)
        let token = try world.server.issueAccessToken(principal: "ada", workspaces: ["acme"])
        let (_, _, jsonBody) = try await Self.get(world, "/changes?limit=20000", accept: nil, token: token)
        #expect((try JSONSerialization.jsonObject(with: jsonBody) as? [String: Any])?["changes"].flatMap { $0 as? [Any] }?.count == 1000)

        let (_, _, body) = try await Self.get(world, "/changes?limit=20000", accept: CompactFeedPage.mediaType, token: token)
        let page = try #require(CompactFeedPage.read(body, limit: CompactFeedPage.maxChanges))
        let sizes = page.frames.map { $0.record?.count ?? 0 }
        let total = sizes.reduce(0, +)
        #expect(page.frames.count < 10_000, "the byte bound cut the page first")
        #expect(total > CompactFeedPage.maxRecordBytes && total - (sizes.last ?? 0) <= CompactFeedPage.maxRecordBytes)
        let envelope = try #require(try JSONSerialization.jsonObject(with: page.envelope) as? [String: Any])
        #expect(envelope["more"] as? Bool == true)
        // Small pages: the count bound.
        let (_, _, small) = try await Self.get(world, "/changes?limit=3", accept: CompactFeedPage.mediaType, token: token)
        #expect(CompactFeedPage.read(small, limit: 10)?.frames.count == 3)

        let outbox = try world.device("ada", principal: "ada")
        let report = try await outbox.pull()
        #expect(report.caughtUp && report.upserted == 10_001)
        #expect(report.pages == 3)
        #expect(try await outbox.storedRecordCount() == 10_001)
        #expect(try await outbox.records(Delivery.byStopOrder(5_000)).map(\.stopOrder) == [5_000])
        let server = Dictionary(uniqueKeysWithValues: world.server.records(workspace: "acme").map { ($0.id, $0.version) })
        let device = try await outbox.records(Delivery.all)
        #expect(device.count == server.count && device.allSatisfy { server[$0.id] == $0.version })
    }
}
