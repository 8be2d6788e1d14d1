import FieldForms
import FormSyncClient
import FormSyncHTTP
import FormSyncModel
import FormSyncServer
import FormSyncTorture
import Foundation
import Synchronization
import Testing

/// Real HTTP servers on loopback that lie: redirects to a portal on another port, absurd
/// Retry-After values, portal pages; and two real servers for two workspaces.
struct HostileHTTPTests {
    /// A loopback server that records every request and answers with `reply`.
    final class Recorder: @unchecked Sendable {
        final class Log: Sendable {
            let entries = Mutex<[HTTPRequest]>([])
            func withLock<T>(_ body: (inout [HTTPRequest]) -> T) -> T { entries.withLock { body(&$0) } }
        }
        let requests = Log()
        let server: HTTPServer
        let port: UInt16

        init(_ reply: @escaping @Sendable (HTTPRequest) -> HTTPResponse) throws {
            let requests = self.requests
            server = HTTPServer { request in
                requests.withLock { $0.append(request) }
                return reply(request)
            }
            port = try server.start()
        }

        deinit { server.stop() }

        var url: URL { URL(string: "http://127.0.0.1:\(port)")! }
    }

    @Test func aRedirectingPortalNeverReceivesTheTokenAndReadsAsNoAnswer() async throws {
        // The "portal" on another port would happily accept anything, token included.
        let portal = try Recorder { _ in .json(200, ["document_id": "doc-1", "id": 7, "service": "formsync", "status": "ok"]) }
        let gateway = try Recorder { request in
            HTTPResponse(status: 302, headers: [("Location", "http://127.0.0.1:\(portal.port)/login?next=\(request.path)")])
        }
        let transport = HTTPTransport(workspace: "acme", baseURL: gateway.url, timeout: .seconds(120)) { "secret-token" }
        let world = try World()
        let outbox = try Outbox(
            path: world.directory.appendingPathComponent("portal.sqlite").path, forms: FormCatalog.forms, transport: transport,
            environment: OutboxEnvironment(now: { world.clock.now }, random: { 0.5 }, newID: OutboxEnvironment.live.newID))
        for n in 1...3 { try await outbox.enqueue(salesOrder(customer: Int64(n), marker: "r\(n)")) }
        let report = await outbox.flush()
        #expect(report.offline)
        #expect(report.sent == 0)
        #expect(await transport.probe() == false)
        for status in [301, 303, 307, 308] {
            let other = try Recorder { _ in HTTPResponse(status: status, headers: [("Location", "http://127.0.0.1:\(portal.port)/")]) }
            let outcome = await HTTPTransport(workspace: "acme", baseURL: other.url, timeout: .seconds(120)) { "secret-token" }.send(
                OutboundRequest(
                    itemID: 1, documentID: "doc-1", attemptID: "k", workspace: "acme",
                    body: .submission(form: "SalesOrder", version: 1, endpoint: "/x", payload: Data("{}".utf8), baseVersion: nil)))
            guard case .unreachable = outcome else {
                Issue.record("\(status) was followed or trusted: \(outcome)")
                continue
            }
        }
        #expect(portal.requests.withLock { $0.isEmpty }, "the portal saw \(portal.requests.withLock { $0.map(\.path) })")
        #expect(gateway.requests.withLock { $0.count } >= 2)  // the gateway was asked, and only the gateway
        let items = try await outbox.items(in: Set(SyncState.allCases))
        #expect(items.allSatisfy { $0.attempts == 0 && $0.state == .waitingForNetwork })
    }

    @Test(arguments: ["99999999999999999999999", "9223372036854775807", "Fri, 31 Dec 9999 23:59:59 GMT", "-5", "1e300", ""])
    func anAbsurdRetryAfterIsCappedNeverTrapsAndNeverHoldsAnItemForLong(_ value: String) async throws {
        let server = try Recorder { _ in
            HTTPResponse(status: 503, headers: [("Retry-After", value), ("Content-Type", "application/json")], body: Data("{}".utf8))
        }
        let world = try World()
        let transport = HTTPTransport(workspace: "acme", baseURL: server.url, timeout: .seconds(120)) { "t" }
        let outbox = try Outbox(
            path: world.directory.appendingPathComponent("ra.sqlite").path, forms: FormCatalog.forms, transport: transport,
            environment: OutboxEnvironment(now: { world.clock.now }, random: { 0.5 }, newID: OutboxEnvironment.live.newID))
        let id = try await outbox.enqueue(salesOrder(customer: 1))
        let report = await outbox.flush()
        #expect(report.retrying == 1)
        let item = try #require(try await outbox.item(id))
        #expect(item.state == .savedOnDevice)
        #expect(item.nextAttemptAt.millisecondsSince1970 > world.clock.now)
        #expect(item.nextAttemptAt.millisecondsSince1970 <= world.clock.now + RetryPolicy().maxRetryAfter.components.seconds * 1000)
    }

    @Test func aDotSegmentValueReachesTheServerEncodedAndCannotReaddressTheRequest() async throws {
        let server = try Recorder { _ in .json(201, ["document_id": "d", "id": 1]) }
        let transport = HTTPTransport(workspace: "acme", baseURL: server.url, timeout: .seconds(120)) { "t" }
        let endpoint = "/sites/" + PathSegment.encode("..") + "/inspections"
        _ = await transport.send(
            OutboundRequest(
                itemID: 1, documentID: "d", attemptID: "k", workspace: "acme",
                body: .submission(form: "SiteInspection", version: 1, endpoint: endpoint, payload: Data("{}".utf8), baseVersion: nil)))
        #expect(server.requests.withLock { $0.map(\.path) } == ["/sites/%2E%2E/inspections"])
    }

    @Test func aCaptivePortalPageStopsTheDrainAndCountsNothing() async throws {
        let world = try World()
        let outbox = try world.device()
        for n in 0..<12 { try await outbox.enqueue(salesOrder(customer: Int64(n + 1), marker: "c\(n)")) }
        world.server.faults.add(.captivePortal, count: 1000)
        let report = await outbox.flush()
        #expect(report.offline)
        #expect(world.server.requestLog().count <= world.concurrency)  // not one per lane
        #expect(try await outbox.items(in: Set(SyncState.allCases)).allSatisfy { $0.attempts == 0 })
        world.server.faults.clear()
        #expect(await outbox.probe())
        #expect(await outbox.flush().sent == 12)
    }

    @Test func eachWorkspaceGoesOnlyToItsOwnServer() async throws {
        let acme = try World()
        let globexServer = try TestStore.server(
            directory: acme.directory.appendingPathComponent("globex").path, forms: FormCatalog.forms, workspace: "globex")
        _ = try globexServer.start()
        defer { globexServer.stop() }
        let globexToken = try globexServer.issueAccessToken(workspaces: ["globex"])
        let acmeTransport = acme.transport(workspace: "acme")
        let globexTransport = HTTPTransport(workspace: "globex", baseURL: globexServer.baseURL, timeout: .seconds(120)) { globexToken }
        let outbox = try Outbox(
            path: acme.directory.appendingPathComponent("two.sqlite").path, workspace: "acme", forms: FormCatalog.forms,
            transports: { ["acme": acmeTransport, "globex": globexTransport][$0] })
        let acmeCustomer = outbox.placeholderIDs.next()
        try await outbox.enqueue(NewCustomer(name: "Acme shop", segment: .retail), documentID: "acme-customer", creates: acmeCustomer)
        try await outbox.enqueue(salesOrder(customer: acmeCustomer, marker: "acme-order"), documentID: "acme-order")
        try await outbox.switchWorkspace(to: "globex")
        await #expect(throws: OutboxError.unknownPlaceholder(acmeCustomer)) { try await outbox.enqueue(salesOrder(customer: acmeCustomer)) }
        try await outbox.enqueue(salesOrder(customer: 9, marker: "globex-order"), documentID: "globex-order")
        #expect(await outbox.flush().sent == 1)
        try await outbox.switchWorkspace(to: "acme")
        #expect(await outbox.flush().sent == 2)
        #expect(Set(acme.server.documents().map(\.documentID)) == ["acme-customer", "acme-order"])
        #expect(globexServer.documents().map(\.documentID) == ["globex-order"])
        #expect(acme.server.requestLog().allSatisfy { $0.workspace == "acme" })
        #expect(globexServer.requestLog().allSatisfy { $0.workspace == "globex" })

        // A server hosting one workspace refuses another's request outright (421, parked).
        let stray = HTTPTransport(workspace: "acme", baseURL: globexServer.baseURL, timeout: .seconds(120)) { globexToken }
        let outcome = await stray.send(
            OutboundRequest(
                itemID: 1, documentID: "stray", attemptID: "stray-key", workspace: "acme",
                body: .submission(
                    form: "SalesOrder", version: SalesOrder.formVersion, endpoint: "/customers/9/orders",
                    payload: try FormRegistry.encode(salesOrder(customer: 9)), baseVersion: nil)))
        guard case .rejected(let reason, _) = outcome else {
            Issue.record("expected a refusal, got \(outcome)")
            return
        }
        #expect(reason.contains("421"))
        #expect(globexServer.documents().count == 1)
    }

    /// A server that resets the connection while a whole file goes up (a node killed mid-upload)
    /// is a network error, every time. URLSession's upload from a file stopped the process on
    /// Linux in the first few rounds (a `try!` on `curl_easy_pause` inside FoundationNetworking).
    /// An upload of `file` (holding `bytes`) as document `document`, announcing `byteCount`
    /// (the bytes' own count unless given).
    static func upload(_ file: URL, _ bytes: Data, document: String, byteCount: Int64? = nil) -> OutboundRequest {
        OutboundRequest(
            itemID: 1, documentID: document, attemptID: "key-\(document)", workspace: "acme",
            body: .file(
                path: file.path, contentType: "application/octet-stream", byteCount: byteCount ?? Int64(bytes.count),
                sha256: SHA256.hash(bytes)))
    }

    @Test func aConnectionResetInTheMiddleOfAFileUploadIsUnreachableAndNothingStops() async throws {
        let server = try RawSocket.Server()
        server.start { fd in
            // A look-up by digest finds nothing; an upload gets its head and first bytes read,
            // then a reset.
            var buffer = [UInt8](repeating: 0, count: 8192)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 4, buffer[0..<4] == [71, 69, 84, 32] {
                RawSocket.send(fd, Data("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
                return
            }
            var reset = linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
        }
        let world = try World()
        let bytes = Data(count: 4 << 20)
        let file = world.directory.appendingPathComponent("big.bin")
        try bytes.write(to: file)
        let transport = HTTPTransport(workspace: "acme", baseURL: server.url, timeout: .seconds(120)) { "t" }
        for round in 0..<40 {
            let outcome = await transport.send(Self.upload(file, bytes, document: "doc-\(round)"))
            guard case .unreachable = outcome else {
                Issue.record("round \(round): \(outcome)")
                return
            }
        }
    }

    /// A timeout is bounded to 1 s – 1 h whatever the app passes (none traps, however large,
    /// negative or fine-grained), and a transport made with any of them still delivers.
    @Test func absurdTimeoutsAreBoundedAndTheTransportStillDelivers() async throws {
        let world = try World()
        let token = try world.server.issueAccessToken(workspaces: World.workspaces)
        let bytes = Data("a small file".utf8)
        let file = world.directory.appendingPathComponent("small.bin")
        try bytes.write(to: file)
        let timeouts: [Duration] = [
            .seconds(Int64.max), .seconds(Int64.min), .zero, .nanoseconds(1), .seconds(-5),
            Duration(secondsComponent: Int64.max, attosecondsComponent: 999_999_999_999_999_999),
        ]
        for (index, timeout) in timeouts.enumerated() {
            let transport = HTTPTransport(workspace: "acme", baseURL: world.server.baseURL, timeout: timeout) { token }
            let outcome = await transport.send(Self.upload(file, bytes, document: "timeout-\(index)"))
            guard case .done = outcome else {
                Issue.record("\(timeout): \(outcome)")
                continue
            }
        }
    }

    /// A file's size read from the outbox is believed only when the file has exactly that many
    /// bytes: a negative or absurd one is refused before anything is sent, and none traps.
    @Test func aFileSizeThatIsNotTheFilesIsRefusedBeforeAnythingIsSent() async throws {
        let world = try World()
        let bytes = Data(count: 4096)
        let file = world.directory.appendingPathComponent("file.bin")
        try bytes.write(to: file)
        let transport = world.transport()
        for (index, size) in [Int64(-1), Int64.min, 4095, 4097, Int64.max].enumerated() {
            let outcome = await transport.send(Self.upload(file, bytes, document: "size-\(index)", byteCount: size))
            guard case .rejected = outcome else {
                Issue.record("\(size): \(outcome)")
                continue
            }
        }
        #expect(world.server.fileIDs().isEmpty, "nothing was stored")
    }
}
