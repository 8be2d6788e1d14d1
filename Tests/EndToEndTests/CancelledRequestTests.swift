import FieldForms
import FormSyncClient
import FormSyncHTTP
import FormSyncServer
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A caller cancelled while its request is on the wire (the engine's stop, a background
/// deadline, the last waiter of a flush leaving) stops waiting at once, and the request itself
/// is left to end by its reply: cancelling a task that awaits Linux URLSession mid-reply can
/// deadlock the whole session (swift-corelibs-foundation #5412).
struct CancelledRequestTests {
    /// A loopback server that holds each request's reply until the test lets it go, and says
    /// whether the client had closed the connection by then.
    final class HeldReplyServer: Sendable {
        let port: UInt16
        private let listener: Int32
        private let arrivals = Mutex(0)
        private let released = DispatchSemaphore(value: 0)
        private let verdicts = Mutex<[Bool]>([])

        init() throws {
            (listener, port) = try RawSocket.listen()
            let thread = Thread { [self] in serve() }
            thread.start()
        }

        deinit { close(listener) }

        /// Waits (up to 60 s) for a request to arrive, without holding a thread of the
        /// concurrency pool.
        func waitForRequest() async throws -> Bool {
            for _ in 0..<6000 {
                if arrivals.withLock({ $0 }) > 0 { return true }
                try await Task.sleep(for: .milliseconds(10))
            }
            return false
        }

        /// Lets the held reply go; true when the client still held the connection open a
        /// second after the release was asked for.
        func releaseAndReport() async throws -> Bool? {
            released.signal()
            for _ in 0..<6000 {
                if let verdict = verdicts.withLock({ $0.first }) { return verdict }
                try await Task.sleep(for: .milliseconds(10))
            }
            return nil
        }

        private func serve() {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            defer { close(fd) }
            guard RawSocket.readRequest(fd) != nil else { return }
            arrivals.withLock { $0 += 1 }
            _ = released.wait(timeout: .now() + 60)
            // A client that cancelled its request closes the socket; give it a second to.
            var open = true
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, 1000) > 0 {
                var byte: UInt8 = 0
                open = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) != 0
            }
            verdicts.withLock { $0.append(open) }
            let body = #"{"document_id":"held-1","id":1}"#
            let reply = "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            _ = reply.withCString { Glibc.send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        }
    }

    static func submission(_ documentID: String) -> OutboundRequest {
        OutboundRequest(
            itemID: 1, documentID: documentID, attemptID: "key-\(documentID)", workspace: "acme",
            body: .submission(form: "SalesOrder", version: 1, endpoint: "/orders", payload: Data(#"{"n":1}"#.utf8), baseVersion: nil))
    }

    @Test func aCancelledCallerStopsWaitingAndItsRequestRunsOnToItsReply() async throws {
        let server = try HeldReplyServer()
        // The request's own timeout is the longest there is: what is tested is that the
        // caller's cancellation does not close the connection, and on a machine slow enough the
        // held reply outlived a 15 s timeout, which closed it (issue 49, a run pinned to one core).
        let transport = HTTPTransport(workspace: "acme", baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, timeout: .seconds(3_600))
        {
            "token"
        }
        let sending = Task { await transport.send(Self.submission("held-1")) }
        #expect(try await server.waitForRequest())
        sending.cancel()
        // The caller is answered while the server still holds the reply.
        let outcome = await sending.value
        guard case .unreachable(let reason) = outcome else {
            Issue.record("a cancelled caller got \(outcome)")
            return
        }
        #expect(reason == "cancelled")
        #expect(try await server.releaseAndReport() == true, "the request was cancelled on the wire: the client closed its connection")
    }

    @Test func callersCancelledAtEveryMomentOfTheirRepliesNeverStopTheSessionAnswering() async throws {
        let server = HTTPServer { request in
            .json(201, ["document_id": request.header("FormSync-Document") ?? "", "id": 1])
        }
        let port = try server.start()
        defer { server.stop() }
        let transport = HTTPTransport(workspace: "acme", baseURL: URL(string: "http://127.0.0.1:\(port)")!, timeout: .seconds(120)) {
            "token"
        }
        var cancelledEarly = 0
        var answered = 0
        for round in 0..<300 {
            let sending = Task { await transport.send(Self.submission("doc-\(round)")) }
            // From before the request leaves to after its reply is in: 0 to 3 ms.
            try await Task.sleep(for: .microseconds((round * 37) % 3000))
            sending.cancel()
            switch await sending.value {
            case .unreachable(reason: "cancelled"): cancelledEarly += 1
            case .done: answered += 1
            case let other: Issue.record("round \(round): \(other)")
            }
        }
        #expect(cancelledEarly + answered == 300)
        // If the session had deadlocked, no request of it would end, its timeouts included.
        let last = Task { await transport.send(Self.submission("after")) }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(60))
            Issue.record("the session stopped answering after \(cancelledEarly) cancelled callers")
        }
        let outcome = await last.value
        watchdog.cancel()
        guard case .done = outcome else {
            Issue.record("the request after the cancellations got \(outcome)")
            return
        }
    }

    @Test func stoppingTheEngineWhileTheServerHoldsAReplyReturnsAndTheItemGoesOnceWithItsKey() async throws {
        let world = try World()
        world.timeout = 60  // the client's own timeout stays out of it
        let outbox = try world.device()
        let id = try await outbox.enqueue(salesOrder(customer: 1, marker: "held"))
        let key = try #require(try await outbox.item(id)).attemptID
        // The server marks the key in flight and holds the request until the test lets it go.
        world.server.faults.add(.hold, count: 1, target: .submissions)
        let engine = SyncEngine(outbox: outbox, environment: OutboxEnvironment(now: { world.clock.now }, random: { 0.5 }, newID: { "" }))
        let running = Task { await engine.run() }
        var polls = 0
        while try await outbox.item(id)?.state != .sent, polls < 6000 {
            polls += 1
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try await outbox.item(id)?.state == .sent)
        engine.stop()
        await running.value
        #expect(world.server.documents().isEmpty, "the engine waited for the held reply instead of returning")
        let waiting = try #require(try await outbox.item(id))
        #expect(waiting.state == .savedOnDevice)
        #expect(waiting.attempts == 0)
        #expect(waiting.attemptID == key)
        world.server.faults.releaseHeld()
        // The request went on to the server, which committed it; the resend gets the ledger's answer.
        polls = 0
        while world.server.documents().isEmpty, polls < 6000 {
            polls += 1
            try await Task.sleep(for: .milliseconds(10))
        }
        let report = await outbox.flush()
        #expect(report.sent == 1)
        #expect(try await outbox.item(id)?.state == .confirmed)
        #expect(world.server.documents().count == 1)
        #expect(world.server.documents().first?.appliedWrites == 1)
        #expect(Set(world.server.requestLog().compactMap(\.idempotencyKey)) == [key])
    }
}
