import FieldForms
import Foundation
import FormSyncModel
import Testing

@testable import FormSyncServer

/// Issue 31's server defects, each fed what broke it: seeds that broke a workspace, a reply to
/// HEAD with a body, a feed limit above 1,000, a request log that grew with its requests' bytes.
struct ServerWallRegressionTests {
    final class Server: @unchecked Sendable {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("regress-\(UUID().uuidString)")
        let server: SyncServer
        let token: String

        init() throws {
            server = try SyncServer(directory: folder.path, forms: FormCatalog.forms, records: FormCatalog.records)
            token = try server.issueAccessToken(principal: "ada", workspaces: ["acme"])
        }

        deinit {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }

        func get(_ path: String, query: String? = nil) -> HTTPResponse? {
            server.handle(HTTPRequest(method: "GET", path: path, query: query, headers: ["authorization": "Bearer \(token)", "formsync-workspace": "acme"], body: Data()))
        }
    }

    // 10: seeds (`--records`, `putRecords`) that broke a workspace.

    @Test func aSeedWithTheLargestIdLeavesLaterCreatesWorking() throws {
        let fixture = try Server()
        let largest: Int64 = 9_007_199_254_740_991
        _ = try fixture.server.putRecord("Customer", id: largest, fields: try FormRegistry.encode(Customer(name: "Last", segment: .retail)), workspace: "acme")
        let order = try ServerGroupCommitTests.order(1, token: fixture.token)
        #expect(fixture.server.handle(order)?.status == 201, "a create after a seed at 2^53 - 1")
        let next = try fixture.server.putRecord(Customer(name: "Next", segment: .retail), workspace: "acme")
        #expect(next.id >= 1 && next.id < largest)
        #expect(Set(fixture.server.documents().map(\.id) + [next.id, largest]).count == 3, "ids stay unique")
    }

    @Test func aSeedOfATypeTheServerHasNoSpecForOrAnOverlongTypeIsRefused() throws {
        let fixture = try Server()
        for type in [String(repeating: "T", count: 200), "Parcel", ""] {
            #expect(throws: SyncServer.RecordError.self) {
                try fixture.server.putRecord(type, fields: Data(#"{"name":"x"}"#.utf8), workspace: "acme")
            }
        }
        let seeds = [
            SyncServer.RecordSeed(type: "Customer", fields: try FormRegistry.encode(Customer(name: "Fine", segment: .retail)), workspace: "acme"),
            SyncServer.RecordSeed(type: String(repeating: "T", count: 200), fields: Data("{}".utf8), workspace: "acme"),
        ]
        #expect(throws: SyncServer.RecordSeedError.self) { try fixture.server.putRecords(seeds) }
        #expect(fixture.server.records(workspace: "acme").isEmpty, "all or nothing")
        // A device's pull is never stopped by what a seed put in the feed.
        let page = try #require(fixture.get("/changes"))
        #expect(page.status == 200)
    }

    @Test func aSeedWithoutAWorkspaceAnyTokenCouldNameIsRefused() throws {
        let fixture = try Server()
        for workspace in ["", "has space", String(repeating: "w", count: 129)] {
            #expect(throws: SyncServer.RecordError.self) { try fixture.server.putRecord(Customer(name: "Lost", segment: .retail), workspace: workspace) }
        }
    }

    @Test func oneIdUnderTwoTypesOrUnderADocumentIsRefused() throws {
        let fixture = try Server()
        _ = try fixture.server.putRecord("Customer", id: 77, fields: try FormRegistry.encode(Customer(name: "Ana", segment: .retail)), workspace: "acme")
        let delivery = try FormRegistry.encode(Delivery(courierId: "ada", status: .assigned, stopOrder: 1, address: "Rua 1"))
        #expect(throws: SyncServer.RecordError.self) { try fixture.server.putRecord("Delivery", id: 77, fields: delivery, workspace: "acme") }
        #expect(throws: SyncServer.RecordError.self) { try fixture.server.putRecord("Delivery", id: 77, fields: delivery, workspace: "other") }
        #expect(fixture.server.handle(try ServerGroupCommitTests.order(1, token: fixture.token))?.status == 201)
        let orderID = try #require(fixture.server.documents().first?.id)
        #expect(throws: SyncServer.RecordError.self) { try fixture.server.putRecord("Delivery", id: orderID, fields: delivery, workspace: "acme") }
        // The same type and id again is a replacement, as before.
        _ = try fixture.server.putRecord("Customer", id: 77, fields: try FormRegistry.encode(Customer(name: "Bea", segment: .retail)), workspace: "acme")
        #expect(fixture.server.record("Customer", id: 77, workspace: "acme")?.version == 2)
    }

    // 12: a reply to HEAD has no content.

    @Test func aReplyToHeadCarriesNoBodySoTheNextReplyOnTheConnectionIsReadRight() throws {
        let fixture = try Server()
        let port = try fixture.server.start()
        for head in ["HEAD /health", "HEAD /documents/nothing", "HEAD /nowhere"] {
            let text = RawSocket.exchange(port, Data("\(head) HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
            let parts = text.components(separatedBy: "\r\n\r\n")
            #expect(parts.count >= 2 && parts[1].hasPrefix("HTTP/1.1 200 OK"), "\(head): the second reply does not follow the first head: \(text.prefix(300))")
        }
    }

    // 13: a feed limit above 1,000 is served as 1,000 (PROTOCOL.md).

    @Test func aFeedLimitAboveAThousandIsServedAsAThousand() throws {
        let fixture = try Server()
        try fixture.server.putRecords((0..<1005).map { n in
            SyncServer.RecordSeed(type: "Customer", fields: try! FormRegistry.encode(Customer(name: "C\(n)", segment: .retail)), workspace: "acme")
        })
        for limit in ["1000000", "1001", "99999999999999999999999999"] {
            let page = try #require(fixture.get("/changes", query: "limit=\(limit)"))
            #expect(page.status == 200, "limit=\(limit)")
            let changes = (try JSONSerialization.jsonObject(with: page.body) as? [String: Any])?["changes"] as? [Any]
            #expect(changes?.count == 1000, "limit=\(limit)")
        }
        for limit in ["0", "-1", "ten", "", "1e3"] {
            #expect(fixture.get("/changes", query: "limit=\(limit)")?.status == 400, "limit=\(limit)")
        }
    }

    // 11: the request log is bounded in bytes, not only in entries.

    @Test func theRequestLogStaysWithinItsByteBudgetWhateverTheRequestsCarry() throws {
        let fixture = try Server()
        let long = String(repeating: "p", count: 4000)
        for n in 0..<12_000 {
            let request = HTTPRequest(
                method: "POST", path: "/\(long)\(n)", query: nil,
                headers: ["idempotency-key": long, "formsync-document": long, "formsync-workspace": long], body: Data())
            _ = fixture.server.handle(request)
        }
        #expect(fixture.server.requestLogBytes <= SyncServer.requestLogByteBudget)
        let log = fixture.server.requestLog()
        #expect(!log.isEmpty && log.count <= SyncServer.requestLogCapacity)
        #expect(log.allSatisfy { $0.path.utf8.count <= SyncServer.requestLogFieldBytes && ($0.idempotencyKey?.utf8.count ?? 0) <= SyncServer.requestLogFieldBytes })
        #expect(log.last?.path.hasSuffix("…") == true, "the newest entry is kept, cut")
    }
}
