import FieldForms
import FormSyncClient
import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import FormSyncTesting
import FormSyncTorture
import Foundation
import Synchronization
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
            server = try TestStore.server(directory: folder.path, forms: FormCatalog.forms, records: FormCatalog.records)
            token = try server.issueAccessToken(principal: "ada", workspaces: ["acme"])
        }

        deinit {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }

        func get(_ path: String, query: String? = nil) -> HTTPResponse? {
            server.handle(
                HTTPRequest(
                    method: "GET", path: path, query: query, headers: ["authorization": "Bearer \(token)", "formsync-workspace": "acme"],
                    body: Data()))
        }
    }

    // 10: seeds (`--records`, `putRecords`) that broke a workspace.

    @Test func aSeedWithTheLargestIdLeavesLaterCreatesWorking() throws {
        let fixture = try Server()
        let largest: Int64 = 9_007_199_254_740_991
        _ = try fixture.server.putRecord(
            "Customer", id: largest, fields: try FormRegistry.encode(Customer(name: "Last", segment: .retail)), workspace: "acme")
        let order = try ServerGroupCommitTests.order(1, token: fixture.token)
        #expect(fixture.server.handle(order)?.status == 201, "a create after a seed at 2^53 - 1")
        let next = try fixture.server.putRecord(Customer(name: "Next", segment: .retail), workspace: "acme")
        #expect(next.id >= 1 && next.id < largest)
        #expect(Set(fixture.server.documents().map(\.id) + [next.id, largest]).count == 3, "ids stay unique")
    }

    @Test func aCreateStepsOverTheIdsTheBackOfficeChoseItself() throws {
        let fixture = try Server()
        for id in Int64(1)...3 {
            _ = try fixture.server.putRecord(
                "Customer", id: id, fields: try FormRegistry.encode(Customer(name: "Seed \(id)", segment: .retail)), workspace: "acme")
        }
        for n in 1...2 { #expect(fixture.server.handle(try ServerGroupCommitTests.order(n, token: fixture.token))?.status == 201) }
        let ids = fixture.server.documents().map(\.id)
        #expect(ids.count == 2 && Set(ids).isDisjoint(with: [1, 2, 3]), "\(ids)")
    }

    @Test func aLongPullsRemainingIsCarriedByItsCursorWithWhatCommitsMeanwhileAndAForgedCountIsCountedAgain() throws {
        let fixture = try Server()
        func seed(_ count: Int) throws {
            try fixture.server.putRecords(
                (0..<count).map { n in
                    SyncServer.RecordSeed(
                        type: "Customer", fields: Data(#"{"name":"Shop \#(n)","segment":"retail"}"#.utf8), workspace: "acme")
                })
        }
        func page(_ cursor: String?) throws -> (count: Int, cursor: String, remaining: Int?) {
            let reply = try #require(fixture.get("/changes", query: "limit=100" + (cursor.map { "&cursor=\($0)" } ?? "")))
            #expect(reply.status == 200)
            let json = try #require(try JSONSerialization.jsonObject(with: reply.body) as? [String: Any])
            return (
                (json[FeedPage.changes] as? [Any])?.count ?? -1, try #require(json[FeedPage.cursor] as? String),
                json[FeedPage.remaining] as? Int
            )
        }
        try seed(350)
        let first = try page(nil)
        #expect(first.count == 100 && first.remaining == 250)
        try seed(7)  // committed mid-pull: past the counted end
        let second = try page(first.cursor)
        #expect(second.count == 100 && second.remaining == 157)
        // A count the server would not have written (beyond its feed, absurd) is not believed.
        let position = try #require(WireSyntax.parseCursor(second.cursor))
        for forged in [(position.changes + 1_000_000, 3), (position.changes, 9_999_999)] {
            let cursor = "c3.\(position.changes).0.\(forged.0).\(forged.1)"
            #expect(try page(cursor).remaining == 57, "\(cursor)")
        }
        for cursor in ["c3.1.0.2", "c3.1.0.2.-1", "c3.1.0.2.3.4"] {
            #expect(fixture.get("/changes", query: "cursor=\(cursor)")?.status == 400, "\(cursor)")
        }
    }

    @Test func aSeedOfATypeTheServerHasNoSpecForOrAnOverlongTypeIsRefused() throws {
        let fixture = try Server()
        for type in [String(repeating: "T", count: 200), "Parcel", ""] {
            #expect(throws: SyncServer.RecordError.self) {
                try fixture.server.putRecord(type, fields: Data(#"{"name":"x"}"#.utf8), workspace: "acme")
            }
        }
        let seeds = [
            SyncServer.RecordSeed(
                type: "Customer", fields: try FormRegistry.encode(Customer(name: "Fine", segment: .retail)), workspace: "acme"),
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
            #expect(throws: SyncServer.RecordError.self) {
                try fixture.server.putRecord(Customer(name: "Lost", segment: .retail), workspace: workspace)
            }
        }
    }

    @Test func oneIdUnderTwoTypesOrUnderADocumentIsRefused() throws {
        let fixture = try Server()
        _ = try fixture.server.putRecord(
            "Customer", id: 77, fields: try FormRegistry.encode(Customer(name: "Ana", segment: .retail)), workspace: "acme")
        let delivery = try FormRegistry.encode(Delivery(courierId: "ada", status: .assigned, stopOrder: 1, address: "Rua 1"))
        #expect(throws: SyncServer.RecordError.self) {
            try fixture.server.putRecord("Delivery", id: 77, fields: delivery, workspace: "acme")
        }
        #expect(throws: SyncServer.RecordError.self) {
            try fixture.server.putRecord("Delivery", id: 77, fields: delivery, workspace: "other")
        }
        #expect(fixture.server.handle(try ServerGroupCommitTests.order(1, token: fixture.token))?.status == 201)
        let orderID = try #require(fixture.server.documents().first?.id)
        #expect(throws: SyncServer.RecordError.self) {
            try fixture.server.putRecord("Delivery", id: orderID, fields: delivery, workspace: "acme")
        }
        // The same type and id again is a replacement, as before.
        _ = try fixture.server.putRecord(
            "Customer", id: 77, fields: try FormRegistry.encode(Customer(name: "Bea", segment: .retail)), workspace: "acme")
        #expect(fixture.server.record("Customer", id: 77, workspace: "acme")?.version == 2)
    }

    // 12: a reply to HEAD has no content.

    @Test func aReplyToHeadCarriesNoBodySoTheNextReplyOnTheConnectionIsReadRight() async throws {
        try await OffThePool.run {
            let fixture = try Server()
            let port = try fixture.server.start()
            for head in ["HEAD /health", "HEAD /documents/nothing", "HEAD /nowhere"] {
                let text = RawSocket.exchange(
                    port, Data("\(head) HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
                let parts = text.components(separatedBy: "\r\n\r\n")
                #expect(
                    parts.count >= 2 && parts[1].hasPrefix("HTTP/1.1 200 OK"),
                    "\(head): the second reply does not follow the first head: \(text.prefix(300))")
            }
        }
    }

    // 13: a feed limit above 1,000 is served as 1,000 (PROTOCOL.md).

    @Test func aFeedLimitAboveAThousandIsServedAsAThousand() async throws {
        try await OffThePool.run {
            let fixture = try Server()
            try fixture.server.putRecords(
                (0..<1005).map { n in
                    SyncServer.RecordSeed(
                        type: "Customer", fields: try! FormRegistry.encode(Customer(name: "C\(n)", segment: .retail)), workspace: "acme")
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
    }

    // 11: the request log is bounded in bytes, not only in entries.

    @Test func theRequestLogStaysWithinItsByteBudgetWhateverTheRequestsCarry() async throws {
        try await OffThePool.run {
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
            #expect(
                log.allSatisfy {
                    $0.path.utf8.count <= SyncServer.requestLogFieldBytes
                        && ($0.idempotencyKey?.utf8.count ?? 0) <= SyncServer.requestLogFieldBytes
                })
            #expect(log.last?.path.hasSuffix("…") == true, "the newest entry is kept, cut")
        }
    }
}

/// Issue 31, 7–9: resumable uploads have quotas and expire, append and hash outside the
/// server's lock, and are bound to their document like a submission.
struct UploadWallRegressionTests {
    final class Fixture: @unchecked Sendable {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("uploads-\(UUID().uuidString)")
        let clock = ManualClock(1_800_000_000_000)
        var server: SyncServer
        var token = ""

        init() throws {
            server = try Self.open(folder, clock)
            token = try server.issueAccessToken(principal: "ada", workspaces: ["acme"])
        }

        static func open(_ folder: URL, _ clock: ManualClock) throws -> SyncServer {
            // The embedded store: these tests read its upload parts on disk and hold its fsyncs.
            try SyncServer(
                directory: folder.path, forms: FormCatalog.forms, records: FormCatalog.records, tokenLifetimeSeconds: 10 * 86_400,
                now: { clock.now })
        }

        func reopen() throws {
            server.stop()
            server = try Self.open(folder, clock)
        }

        deinit {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }

        func create(_ document: String, length: Int64, digest: Data = SHA256.hash(Data("x".utf8))) -> HTTPResponse? {
            server.handle(
                HTTPRequest(
                    method: "POST", path: "/uploads", query: nil,
                    headers: [
                        "authorization": "Bearer \(token)", "formsync-workspace": "acme", "idempotency-key": "k-\(document)",
                        "formsync-document": document,
                        "upload-length": String(length), "repr-digest": "sha-256=:\(digest.base64EncodedString()):",
                        "upload-complete": "?0",
                    ], body: Data()))
        }

        func append(_ location: String, _ bytes: Data, at offset: Int, complete: Bool) -> HTTPResponse? {
            server.handle(
                HTTPRequest(
                    method: "PATCH", path: location, query: nil,
                    headers: [
                        "authorization": "Bearer \(token)", "formsync-workspace": "acme", "upload-offset": String(offset),
                        "upload-complete": complete ? "?1" : "?0",
                    ], body: bytes))
        }

        func head(_ location: String) -> HTTPResponse? {
            server.handle(
                HTTPRequest(
                    method: "HEAD", path: location, query: nil,
                    headers: ["authorization": "Bearer \(token)", "formsync-workspace": "acme"], body: Data()))
        }
    }

    @Test func uploadsAnnouncingHugeFilesMeetAQuotaPerPrincipal() throws {
        let fixture = try Fixture()
        var accepted = 0
        for n in 0..<200 {
            if fixture.create("big-\(n)", length: 4 << 30)?.status == 201 { accepted += 1 }
        }
        #expect(accepted == 4, "16 GiB of announced bytes per principal")
        let refused = try #require(fixture.create("big-last", length: 4 << 30))
        #expect(refused.status == 429 && String(decoding: refused.body, as: UTF8.self).contains("upload-quota"))
        #expect(refused.headers.contains { $0.0 == "Retry-After" })
        // Another principal has a quota of its own; the count bounds small uploads too.
        fixture.token = try fixture.server.issueAccessToken(principal: "bob", workspaces: ["acme"])
        var small = 0
        for n in 0..<100 where fixture.create("small-\(n)", length: 10)?.status == 201 { small += 1 }
        #expect(small == UploadLimitsProbe.count)
    }

    @Test func anAbandonedUploadExpiresEvenAcrossARestartAndItsBytesGo() throws {
        let fixture = try Fixture()
        let created = try #require(fixture.create("abandoned", length: 100))
        let location = try #require(created.headers.first { $0.0 == "Location" }?.1)
        #expect(fixture.append(location, Data(repeating: 1, count: 40), at: 0, complete: false)?.status == 204)
        let parts = fixture.folder.appendingPathComponent("files/uploads")
        #expect(try FileManager.default.contentsOfDirectory(atPath: parts.path).count == 1)
        fixture.clock.advance(by: 23 * 3_600_000)
        #expect(fixture.head(location)?.status == 204, "kept while it is younger than a day")
        fixture.clock.advance(by: 2 * 3_600_000)
        try fixture.reopen()
        fixture.token = try fixture.server.issueAccessToken(principal: "ada", workspaces: ["acme"])
        #expect(fixture.head(location)?.status == 404, "expired at the server's start")
        #expect(try FileManager.default.contentsOfDirectory(atPath: parts.path).isEmpty, "its bytes are gone")
        #expect(fixture.create("abandoned", length: 100)?.headers.first { $0.0 == "Upload-Offset" }?.1 == "0", "created anew, from 0")
    }

    @Test func anAppendHeldInItsFsyncDoesNotHoldUpASubmission() async throws {
        try await OffThePool.run {
            let fixture = try Fixture()
            let bytes = Data(repeating: 7, count: 1 << 20)
            let created = try #require(fixture.create("held", length: Int64(bytes.count), digest: SHA256.hash(bytes)))
            let location = try #require(created.headers.first { $0.0 == "Location" }?.1)
            let inSync = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let first = Atomic(true)
            fixture.server.sqliteStore.durableFiles.sync = { fd in
                // The append's fsync is held; later ones (the completion's folder sync) are not.
                if first.exchange(false, ordering: .relaxed) {
                    inSync.signal()
                    _ = release.wait(timeout: .now() + 60)
                }
                return fsync(fd)
            }
            let appended = DispatchSemaphore(value: 0)
            let server = fixture.server
            let token = fixture.token
            Thread.detachNewThread {
                _ = server.handle(
                    HTTPRequest(
                        method: "PATCH", path: location, query: nil,
                        headers: [
                            "authorization": "Bearer \(token)", "formsync-workspace": "acme", "upload-offset": "0", "upload-complete": "?1",
                        ], body: bytes))
                appended.signal()
            }
            #expect(inSync.wait(timeout: .now() + 30) == .success, "the append reached its fsync")
            // The append holds its fsync; a submission and a second append to it are answered meanwhile.
            let answered = DispatchSemaphore(value: 0)
            let status = Mutex<[Int]>([])
            Thread.detachNewThread {
                let order = try! ServerGroupCommitTests.order(1, token: token)
                status.withLock { $0.append(server.handle(order)?.status ?? 0) }
                status.withLock {
                    $0.append(
                        server.handle(
                            HTTPRequest(
                                method: "PATCH", path: location, query: nil,
                                headers: [
                                    "authorization": "Bearer \(token)", "formsync-workspace": "acme", "upload-offset": "0",
                                    "upload-complete": "?0",
                                ], body: Data([1])))?.status ?? 0)
                }
                answered.signal()
            }
            let meanwhile = answered.wait(timeout: .now() + 30)
            release.signal()
            #expect(meanwhile == .success, "a submission waited for another request's file fsync")
            #expect(status.withLock { $0 } == [201, 409])
            #expect(appended.wait(timeout: .now() + 30) == .success)
            #expect(fixture.server.fileIDs().count == 1)
        }
    }

    @Test func anUploadIsBoundToItsDocumentLikeASubmission() throws {
        let fixture = try Fixture()
        let bytes = Data("the stored file".utf8)
        let stored = fixture.server.handle(ServerFileDurabilityTests.file(bytes, document: "stored", token: fixture.token))
        #expect(stored?.status == 201)
        // The stored file's id with other bytes: refused at once, never a 500 on every retry.
        for _ in 0..<3 {
            #expect(fixture.create("stored", length: 5, digest: SHA256.hash(Data("other".utf8)))?.status == 409)
        }
        #expect(fixture.create("stored", length: Int64(bytes.count), digest: SHA256.hash(bytes))?.status == 200, "the same file is done")
        // An unfinished upload's id is not a file for POST /files, nor a form document.
        #expect(fixture.create("pending", length: 10)?.status == 201)
        #expect(
            fixture.server.handle(ServerFileDurabilityTests.file(Data("0123456789".utf8), document: "pending", token: fixture.token))?
                .status == 409)
        var order = try ServerGroupCommitTests.order(9, token: fixture.token)
        order.headers["formsync-document"] = "pending"
        #expect(fixture.server.handle(order)?.status == 409)
    }
}

enum UploadLimitsProbe {
    static let count = SyncServer.UploadLimits().maxUnfinishedPerPrincipal
}
