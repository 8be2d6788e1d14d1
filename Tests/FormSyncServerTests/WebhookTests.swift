import CorpusForms
import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import FormSyncServer
import FormSyncTesting
import FormSyncTorture
import Foundation
import Synchronization
import Testing

/// Webhooks over real HTTP on 127.0.0.1, on the store this run tests (docs/PROTOCOL.md,
/// "Webhooks"): receivers that are down for an hour, slow, failing or redirecting get every
/// event once by id, in order per document, signed, and never the secret; deliveries outlive a
/// restart and a node's death. The server's clock is the test's; passes run when the test says.
struct WebhookTests {
    /// A receiver on 127.0.0.1 that keeps every request and answers as the test says.
    final class Receiver: Sendable {
        struct Received: Sendable {
            var headers: [String: String]
            var body: Data
            var status: Int
            var eventID: Int64 { Int64(headers[ProtocolHeader.eventID.lowercased()] ?? "") ?? 0 }
            var documentID: String {
                ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any])?["document_id"] as? String ?? ""
            }
        }

        let http: HTTPServer
        let port: UInt16
        private let state: State

        /// What the server's handler and the test share.
        final class State: Sendable {
            let answer: Mutex<@Sendable (HTTPRequest) -> HTTPResponse>
            let log = Mutex<[Received]>([])
            init(_ answer: @escaping @Sendable (HTTPRequest) -> HTTPResponse) { self.answer = Mutex(answer) }
        }

        init(_ answer: @escaping @Sendable (HTTPRequest) -> HTTPResponse = { _ in .json(200, ["ok": true]) }) throws {
            let state = State(answer)
            self.state = state
            http = HTTPServer { request in
                let reply = state.answer.withLock { $0 }(request)
                state.log.withLock { $0.append(Received(headers: request.headers, body: request.body, status: reply.status)) }
                return reply
            }
            port = try http.start()
        }

        deinit { http.stop() }

        var url: String { "http://127.0.0.1:\(port)/formsync" }
        var received: [Received] { state.log.withLock { $0 } }
        var taken: [Received] { received.filter { (200..<300).contains($0.status) } }
        func answer(_ next: @escaping @Sendable (HTTPRequest) -> HTTPResponse) { state.answer.withLock { $0 = next } }
    }

    final class Setup: @unchecked Sendable {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("webhooks-\(UUID().uuidString)")
        let clock = DeviceCredentialTests.Setup.Clock()
        var server: SyncServer
        let ada: String
        let office: String
        var key = 0

        init() throws {
            let clock = clock
            // Tokens outlive the days the test's clock goes through.
            server = try TestStore.server(
                directory: folder.path, forms: FormCatalog.forms, records: FormCatalog.records, tokenLifetimeSeconds: 30 * 24 * 3600,
                now: { clock.now })
            ada = try server.issueAccessToken(principal: "ada", workspaces: ["acme"])
            office = try server.issueAccessToken(principal: "office", workspaces: ["acme"], role: .backOffice)
        }

        deinit { try? FileManager.default.removeItem(at: folder) }

        func send(
            _ method: String, _ path: String, token: String, headers extra: [String: String] = [:], body: Data = Data()
        ) -> (
            status: Int, body: Data
        ) {
            key += 1
            var headers = ["authorization": "Bearer \(token)", "formsync-workspace": "acme", "idempotency-key": "k-\(key)"]
            headers.merge(extra) { _, new in new }
            let reply = server.handle(HTTPRequest(method: method, path: path, query: nil, headers: headers, body: body))
            return (reply?.status ?? 0, reply?.body ?? Data())
        }

        func register(_ url: String, events: [HistoryEvent]? = nil) throws -> Webhook {
            let made = send("POST", "/webhooks", token: office, body: try JSONEncoder().encode(WebhookCreate(url: url, events: events)))
            try #require(made.status == 201, "\(String(decoding: made.body, as: UTF8.self))")
            return try JSONDecoder().decode(Webhook.self, from: made.body)
        }

        /// A plate with its photo named by digest, then the photo: two events.
        func plate(_ document: String) throws {
            let photo = PendingFileServerTests.jpeg(3_000, seed: UInt8(truncatingIfNeeded: document.utf8.reduce(0, &+)))
            let pending = FileRef.pending(sha256: SHA256.hash(photo), byteCount: Int64(photo.count), contentType: "image/jpeg")
            let created = send(
                "POST", "/plates", token: ada,
                headers: ["formsync-document": document, "formsync-form": "NewPlate; version=1", "content-type": "application/json"],
                body: try FormRegistry.encode(NewPlate(name: "Plate \(document)", photo: pending)))
            try #require(created.status == 201)
            let stored = send(
                "POST", "/files", token: ada,
                headers: [
                    "formsync-document": "\(document)-photo", "content-type": "image/jpeg",
                    "content-digest": FileRef.digestText(SHA256.hash(photo)),
                ], body: photo)
            try #require(stored.status == 201)
        }

        func deliveries(_ webhook: Int64, state: String? = nil) throws -> [WebhookDelivery] {
            let path = "/webhooks/\(webhook)/deliveries"
            let reply = server.handle(
                HTTPRequest(
                    method: "GET", path: path, query: state.map { "state=\($0)" },
                    headers: ["authorization": "Bearer \(office)", "formsync-workspace": "acme"], body: Data()))
            return try JSONDecoder().decode(WebhookDeliveryList.self, from: reply?.body ?? Data()).deliveries
        }
    }

    /// Every event id taken once, each document's in the order its events were made, each signed.
    static func expectEveryEventOnceInOrder(_ receiver: Receiver, events: Int, secret: String, now: Int64) {
        let taken = receiver.taken
        #expect(taken.count == events, "\(taken.map(\.eventID))")
        #expect(Set(taken.map(\.eventID)).count == events, "each event once by id")
        for document in Set(taken.map(\.documentID)) {
            let ids = taken.filter { $0.documentID == document }.map(\.eventID)
            #expect(ids == ids.sorted(), "\(document)'s events in order: \(ids)")
        }
        for delivery in receiver.received {
            let header = delivery.headers[ProtocolHeader.signature.lowercased()] ?? ""
            #expect(WebhookSignature.verify(header: header, body: delivery.body, secret: secret, now: now, tolerance: 7200))
            #expect(
                !WebhookSignature.verify(header: header, body: delivery.body + Data(" ".utf8), secret: secret, now: now, tolerance: 7200))
        }
    }

    @Test func aReceiverDownForAnHourThenBackGetsEveryEventOnceInOrderPerDocumentSigned() async throws {
        try await OffThePool.run {
            let s = try Setup()
            let receiver = try Receiver { _ in .json(503, ["down": true]) }
            let webhook = try s.register(receiver.url)
            let secret = try #require(webhook.secret)
            for n in 1...3 { try s.plate("plate-\(n)") }

            // Down for an hour: each document's first event is tried, backed off, tried again.
            var attempts = 0
            for _ in 0..<6 {
                let pass = s.server.webhooks.deliver()
                #expect(pass.delivered == 0)
                attempts += pass.attempted
                s.clock.advance(milliseconds: 10 * 60 * 1000)
            }
            #expect(receiver.received.count == attempts && attempts >= 3)
            #expect(Set(receiver.received.map(\.documentID)) == ["plate-1", "plate-2", "plate-3"])
            #expect(receiver.received.allSatisfy { $0.headers[ProtocolHeader.event.lowercased()] == "accepted" }, "the first events only")
            let waiting = try s.deliveries(webhook.id, state: "pending")
            #expect(waiting.count == 6 && waiting.contains { $0.lastStatus == 503 && $0.attempts >= 1 })

            // Back: within the longest backoff everything arrives, once each.
            receiver.answer { _ in .json(200, ["ok": true]) }
            s.clock.advance(milliseconds: 3600 * 1000)
            let pass = s.server.webhooks.deliver()
            #expect(pass.delivered == 6)
            Self.expectEveryEventOnceInOrder(receiver, events: 6, secret: secret, now: s.clock.now / 1000)
            #expect(try s.deliveries(webhook.id, state: "delivered").count == 6)
            #expect(s.server.webhooks.deliver().attempted == 0, "nothing is sent twice")
            let event = try JSONDecoder().decode(SubmissionEvent.self, from: try #require(receiver.taken.first?.body))
            #expect(event.event == .accepted && event.files?.first?.state == .pending && event.author.principal == "ada")
        }
    }

    @Test func aRedirectingReceiverIsNeverFollowedAndNoDeliveryCarriesTheSecret() async throws {
        try await OffThePool.run {
            let s = try Setup()
            let elsewhere = try Receiver()
            let redirecting = try Receiver { _ in
                HTTPResponse(status: 307, headers: [("Location", "http://127.0.0.1:\(elsewhere.port)/stolen")], body: Data())
            }
            let webhook = try s.register(redirecting.url)
            let secret = try #require(webhook.secret)
            try s.plate("plate-r")
            let pass = s.server.webhooks.deliver()
            #expect(pass.attempted == 1 && pass.delivered == 0)
            #expect(redirecting.received.count == 1)
            #expect(elsewhere.received.isEmpty, "the redirect was not followed")
            let delivery = try #require(try s.deliveries(webhook.id).last)
            #expect(delivery.state == .pending && delivery.lastStatus == 307 && delivery.lastError?.contains("redirect") == true)
            for request in redirecting.received {
                let raw =
                    request.headers.map { "\($0.key): \($0.value)" }.joined(separator: "\n") + String(decoding: request.body, as: UTF8.self)
                #expect(!raw.contains(secret) && !raw.contains(String(secret.dropFirst(6))), "the secret never travels")
            }
        }
    }

    @Test func aSlowOrFailingReceiverGetsItLaterAndADeadLetterCanBeResentUnderARotatedSecret() async throws {
        try await OffThePool.run {
            let s = try Setup()
            var policy = s.server.webhooks.policy
            policy.timeoutSeconds = 1
            policy.retryWindowSeconds = 120
            s.server.webhooks.policy = policy
            let slowOnce = Atomic<Bool>(true)
            let receiver = try Receiver { _ in
                if slowOnce.exchange(false, ordering: .relaxed) { Thread.sleep(forTimeInterval: 2.5) }
                return .json(500, ["broken": true])
            }
            let webhook = try s.register(receiver.url, events: [.accepted])
            let firstSecret = try #require(webhook.secret)
            try s.plate("plate-d")
            #expect(s.server.webhooks.deliver().attempted == 1)
            let timedOut = try #require(try s.deliveries(webhook.id).first)
            #expect(timedOut.lastStatus == nil && timedOut.lastError != nil && timedOut.state == .pending, "\(timedOut)")
            s.clock.advance(milliseconds: 130_000)
            // From here on the receiver answers at once: a patient timeout, for a loaded machine.
            policy.timeoutSeconds = 60
            s.server.webhooks.policy = policy
            let gaveUp = s.server.webhooks.deliver()
            let after = try s.deliveries(webhook.id)
            #expect(gaveUp.dead == 1, "\(gaveUp) \(after)")
            let dead = try #require(try s.deliveries(webhook.id, state: "dead").first)
            #expect(dead.lastStatus == 500 && dead.attempts == 2)
            let listed = try JSONDecoder().decode(WebhookList.self, from: s.send("GET", "/webhooks", token: s.office).body)
            #expect(listed.webhooks.first?.dead == 1 && listed.webhooks.first?.secret == nil)

            // A new secret; for a day both sign, so a receiver that still holds the old one passes.
            let rotated = s.send("POST", "/webhooks/\(webhook.id)/secret", token: s.office)
            let newSecret = try #require(try JSONDecoder().decode(Webhook.self, from: rotated.body).secret)
            #expect(newSecret != firstSecret)
            receiver.answer { _ in .json(204, [:]) }
            #expect(s.send("POST", "/webhooks/\(webhook.id)/deliveries/\(dead.id)/resend", token: s.office).status == 200)
            #expect(s.send("POST", "/webhooks/\(webhook.id)/deliveries/\(dead.id)/resend", token: s.office).status == 404)
            #expect(s.server.webhooks.deliver().delivered == 1)
            let last = try #require(receiver.taken.last)
            let header = last.headers[ProtocolHeader.signature.lowercased()] ?? ""
            for secret in [firstSecret, newSecret] {
                #expect(WebhookSignature.verify(header: header, body: last.body, secret: secret, now: s.clock.now / 1000))
            }
            s.clock.advance(milliseconds: 25 * 3600 * 1000)
            try s.plate("plate-e")
            _ = s.server.webhooks.deliver()
            let later = try #require(receiver.taken.last)
            let laterHeader = later.headers[ProtocolHeader.signature.lowercased()] ?? ""
            #expect(WebhookSignature.verify(header: laterHeader, body: later.body, secret: newSecret, now: s.clock.now / 1000))
            #expect(!WebhookSignature.verify(header: laterHeader, body: later.body, secret: firstSecret, now: s.clock.now / 1000))
        }
    }

    @Test func deliveriesOutliveARestartOfTheServer() async throws {
        try await OffThePool.run {
            let s = try Setup()
            let receiver = try Receiver { _ in .json(503, [:]) }
            let webhook = try s.register(receiver.url)
            try s.plate("plate-x")
            _ = s.server.webhooks.deliver()
            s.server.stop()
            let clock = s.clock
            s.server = try TestStore.server(
                directory: s.folder.path, forms: FormCatalog.forms, records: FormCatalog.records, tokenLifetimeSeconds: 30 * 24 * 3600,
                now: { clock.now })
            receiver.answer { _ in .json(200, [:]) }
            s.clock.advance(milliseconds: 3600 * 1000)
            #expect(s.server.webhooks.deliver().delivered == 2)
            Self.expectEveryEventOnceInOrder(receiver, events: 2, secret: try #require(webhook.secret), now: s.clock.now / 1000)
        }
    }

    @Test func aDeliveryANodeClaimedAndNeverFinishedIsPostedByAnotherNodeOnceItsClaimLapses() async throws {
        try await OffThePool.run {
            let url = try PostgresCluster.shared().makeDatabase()
            let clock = DeviceCredentialTests.Setup.Clock()
            let nodes = try (0..<2).map { _ in
                try TestStore.postgresServer(
                    url: url, forms: FormCatalog.forms, records: FormCatalog.records, tokenLifetimeSeconds: 30 * 24 * 3600,
                    now: { clock.now })
            }
            let first = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let held = Atomic<Bool>(true)
            let receiver = try Receiver { _ in
                if held.exchange(false, ordering: .relaxed) {
                    first.signal()
                    release.wait()
                }
                return .json(200, [:])
            }
            for node in nodes {
                var policy = node.webhooks.policy
                policy.timeoutSeconds = 60
                node.webhooks.policy = policy
            }
            let office = try nodes[0].issueAccessToken(principal: "office", workspaces: ["acme"], role: .backOffice)
            let token = try nodes[0].issueAccessToken(principal: "ada", workspaces: ["acme"])
            func send(_ node: SyncServer, _ method: String, _ path: String, _ headers: [String: String], _ body: Data) -> Int {
                node.handle(HTTPRequest(method: method, path: path, query: nil, headers: headers, body: body))?.status ?? 0
            }
            let made = send(
                nodes[1], "POST", "/webhooks", ["authorization": "Bearer \(office)", "formsync-workspace": "acme"],
                try JSONEncoder().encode(WebhookCreate(url: receiver.url, events: [.accepted])))
            #expect(made == 201)
            let created = send(
                nodes[0], "POST", "/surveys",
                [
                    "authorization": "Bearer \(token)", "formsync-workspace": "acme", "idempotency-key": "k-1", "formsync-document": "s-1",
                    "formsync-form": "Survey; version=1", "content-type": "application/json",
                ], Data(#"{"passed":true}"#.utf8))
            #expect(created == 201)

            // Node 0 claims the delivery and hangs in its post (as a node that died would never finish).
            let finished = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                nodes[0].webhooks.deliver()
                finished.signal()
            }
            first.wait()
            #expect(nodes[1].webhooks.deliver().attempted == 0, "claimed by node 0: not posted twice while the claim holds")
            clock.advance(milliseconds: 2 * 60 * 1000)
            let taken = nodes[1].webhooks.deliver()
            #expect(taken.delivered == 1, "the claim lapsed: node 1 posts it")
            release.signal()
            finished.wait()
            let ids = receiver.received.map(\.eventID)
            #expect(ids.count == 2 && Set(ids).count == 1, "the same event id both times, for the receiver to drop one: \(ids)")
        }
    }

    @Test func theWebhookRoutesRefuseWhatTheyCannotKeep() throws {
        let s = try Setup()
        for url in ["ftp://x.example/", "https://user:pw@x.example/", "https://x.example/#frag", "https:///nohost", "not a url", ""] {
            let made = s.send("POST", "/webhooks", token: s.office, body: try JSONEncoder().encode(WebhookCreate(url: url)))
            #expect(made.status == 400, "\(url)")
        }
        let reviewedOnly = s.send(
            "POST", "/webhooks", token: s.office,
            body: try JSONEncoder().encode(WebhookCreate(url: "https://x.example/", events: [.created])))
        #expect(reviewedOnly.status == 400)
        let unknownForm = s.send(
            "POST", "/webhooks", token: s.office, body: try JSONEncoder().encode(WebhookCreate(url: "https://x.example/", forms: ["Nope"])))
        #expect(unknownForm.status == 404)
        #expect(
            s.send("POST", "/webhooks", token: s.ada, body: try JSONEncoder().encode(WebhookCreate(url: "https://x.example/"))).status
                == 403)
        #expect(s.send("DELETE", "/webhooks/999", token: s.office).status == 404)
        #expect(s.send("GET", "/webhooks/999/deliveries", token: s.office).status == 404)
        let webhook = try s.register("https://x.example/")
        #expect(s.send("DELETE", "/webhooks/\(webhook.id)", token: s.office).status == 200)
        #expect(s.send("DELETE", "/webhooks/\(webhook.id)", token: s.office).status == 404)
    }
}
