import FormSyncClient
import FormSyncTesting
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A reply is bounded: a portal, a proxy or a hostile server that answers with hundreds of
/// megabytes (or declares them) fails its request at `maxReplyBytes`, read as "no FormSync
/// server answered", and the rest is dropped as it arrives. (URLSession's `data(for:)` on Linux
/// buffered whatever came: a 262 MB reply ran to its end and the process held 316 MB.)
struct OversizedReplyTests {
    /// Answers every request with a head and then up to `total` bytes of body in 64 KiB
    /// writes. (An oversized reply is drained, not stopped, so these stay small: a few hundred
    /// megabytes drained at loopback speed starve every other test running beside them.)
    final class FloodingServer: Sendable {
        let total: Int
        private let server: RawSocket.Server
        private let chunked: Bool
        private let declared: Bool
        private let thenTrickle: Bool
        /// Trickles that ended because the client closed the connection, before their minute.
        let cutShort = RawSocket.CutShortCount()

        /// - Parameters:
        ///   - declared: the head announces the whole length (otherwise none, and the body is
        ///     sent until the connection closes, or in chunks when `chunked`).
        ///   - thenTrickle: after `total` bytes, one more every 100 ms for up to a minute (an
        ///     endless reply that never trips the client's timeout).
        init(declared: Bool, chunked: Bool = false, total: Int = 8 << 20, thenTrickle: Bool = false) throws {
            self.total = total
            self.declared = declared
            self.chunked = chunked
            self.thenTrickle = thenTrickle
            server = try RawSocket.Server()
            server.start { [self] in flood($0) }
        }

        var url: URL { server.url }

        private func flood(_ fd: Int32) {
            guard RawSocket.readRequest(fd) != nil else { return }
            var head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            if declared { head += "Content-Length: \(total)\r\n" } else if chunked { head += "Transfer-Encoding: chunked\r\n" }
            RawSocket.send(fd, Data((head + "\r\n").utf8))
            let block = Data(repeating: UInt8(ascii: " "), count: 64 << 10)
            let frame = chunked ? Data("10000\r\n".utf8) + block + Data("\r\n".utf8) : block
            var sent = 0
            while sent < total {
                let n = frame.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard n == frame.count else { return }
                sent += block.count
            }
            guard thenTrickle else { return }
            RawSocket.trickle(fd, ticks: 600, cutShort: cutShort)
        }
    }

    static func submission(_ documentID: String) -> OutboundRequest {
        CancelledRequestTests.submission(documentID)
    }

    @Test func aReplyDeclaringMoreThanTheLimitFailsItsRequestWithItsFirstBytes() async throws {
        let server = try FloodingServer(declared: true, total: 64 << 20)
        let transport = HTTPTransport(workspace: "acme", baseURL: server.url, timeout: .seconds(10), maxReplyBytes: 1 << 20) { "token" }
        let outcome = await transport.send(Self.submission("flood-1"))
        #expect(
            outcome == .unreachable(reason: "the reply declared \(64 << 20) bytes, more than the 1048576 accepted; the rest was dropped"))
    }

    @Test func aReplyWithNoLengthThatGrowsPastTheLimitFailsItsRequestThere() async throws {
        for chunked in [false, true] {
            let server = try FloodingServer(declared: false, chunked: chunked)
            let transport = HTTPTransport(workspace: "acme", baseURL: server.url, timeout: .seconds(10), maxReplyBytes: 1 << 20) { "token" }
            let outcome = await transport.send(Self.submission("flood-2"))
            #expect(
                outcome == .unreachable(reason: "the reply grew past the 1048576 bytes accepted; the rest was dropped"),
                "chunked: \(chunked)")
        }
    }

    @Test func anEndlessOversizedReplyIsDrainedOnlyUntilTheExchangesDeadline() async throws {
        let server = try FloodingServer(declared: false, total: 2 << 20, thenTrickle: true)
        // A 2 s timeout gives a 12 s deadline; the reply trickles on for a minute past the bound.
        // (With 1 s, one CI run, its two cores shared by 80 suites, got another outcome than the
        // bound's: a second without a byte is within reach there.)
        let transport = HTTPTransport(workspace: "acme", baseURL: server.url, timeout: .seconds(2), maxReplyBytes: 1 << 20) { "token" }
        #expect(
            await transport.send(Self.submission("flood-4"))
                == .unreachable(reason: "the reply grew past the 1048576 bytes accepted; the rest was dropped"))
        let stopped = try await server.cutShort.reaches(1, within: 25)
        #expect(stopped, "the drained reply was never stopped")
    }

    /// The reply's bytes are handled on a queue of the transport's own, not on URLSession's
    /// default delegate queue, which on Linux runs on the cooperative pool's threads: with every
    /// one of them busy, the bytes that crossed the bound waited there while the exchange's
    /// deadline passed, and the request ended as "no complete reply" instead.
    @Test func aReplyPastTheLimitIsAnsweredWhileEveryTaskThreadIsBusy() async throws {
        let server = try FloodingServer(declared: false, total: 2 << 20, thenTrickle: true)
        let transport = HTTPTransport(workspace: "acme", baseURL: server.url, timeout: .seconds(2), maxReplyBytes: 1 << 20) { "token" }
        let answer = Mutex<DeliveryOutcome?>(nil)
        // The sending task runs on threads of its own, so that only the transport's own
        // handling of the reply is left to find a thread while the pool's are all busy.
        let sending = Task(executorPreference: DedicatedThreads.shared) {
            let outcome = await transport.send(Self.submission("flood-5"))
            answer.withLock { $0 = outcome }
        }
        let sawTheAnswer = await BusyPool.spin { answer.withLock { $0 } != nil }
        await sending.value
        #expect(sawTheAnswer, "the reply was handled only once the pool's threads were free")
        #expect(
            answer.withLock { $0 } == .unreachable(reason: "the reply grew past the 1048576 bytes accepted; the rest was dropped"))
    }

    @Test func anOversizedFeedPageOrHealthReplyIsNoAnswerEither() async throws {
        let server = try FloodingServer(declared: false, chunked: true)
        let transport = HTTPTransport(workspace: "acme", baseURL: server.url, timeout: .seconds(10), maxReplyBytes: 1 << 20) { "token" }
        guard case .unreachable(let reason) = await transport.fetchChanges(cursor: nil, limit: 10) else {
            Issue.record("an oversized page was taken as an answer")
            return
        }
        #expect(reason == "the reply grew past the 1048576 bytes accepted; the rest was dropped")
        #expect(await transport.probe() == false)
    }

    @Test func aLimitBelowSixtyFourKibibytesIsReadAsSixtyFourAndRepliesUnderItPass() async throws {
        // A server's ordinary answers are small; the smallest bound still takes them.
        let world = try World()
        let token = try world.server.issueAccessToken(workspaces: ["acme"])
        let transport = HTTPTransport(workspace: "acme", baseURL: world.server.baseURL, timeout: .seconds(10), maxReplyBytes: -5) { token }
        #expect(await transport.probe())
        guard case .page = await transport.fetchChanges(cursor: nil, limit: 10) else {
            Issue.record("the feed's first page did not come through a 64 KiB bound")
            return
        }
        let server = try FloodingServer(declared: true)
        let tiny = HTTPTransport(workspace: "acme", baseURL: server.url, timeout: .seconds(10), maxReplyBytes: 0) { "token" }
        #expect(
            await tiny.send(Self.submission("flood-3"))
                == .unreachable(reason: "the reply declared \(server.total) bytes, more than the 65536 accepted; the rest was dropped"))
    }
}
