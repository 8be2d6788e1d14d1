import FormSyncClient
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server, or a proxy in front of it, that trickles its reply a byte at a time never trips
/// URLSession's timeout on Linux (it counts only the time between bytes, and
/// `timeoutIntervalForResource` is not honoured there). The transport's own deadline for the
/// whole exchange ends the wait, so a flush, a pull or a probe cannot be held forever.
struct TrickledReplyTests {
    /// Answers every request with a head that announces 100,000 bytes, then sends one byte
    /// every 100 ms, `ticks` times (a minute by default), and closes the connection.
    final class TricklingServer: Sendable {
        private let server: RawSocket.Server
        private let ticks: Int
        let served = Mutex(0)
        /// Trickles that ran to their end or were cut short.
        let ended = Mutex(0)
        /// Trickles that ended because the client closed the connection, before their end.
        let cutShort = RawSocket.CutShortCount()

        init(ticks: Int = 600) throws {
            self.ticks = ticks
            server = try RawSocket.Server()
            server.start { [self] in trickle($0) }
        }

        var url: URL { server.url }

        private func trickle(_ fd: Int32) {
            guard RawSocket.readRequest(fd) != nil else { return }
            served.withLock { $0 += 1 }
            RawSocket.send(fd, Data("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{".utf8))
            RawSocket.trickle(fd, ticks: ticks, cutShort: cutShort)
            ended.withLock { $0 += 1 }
        }
    }

    @Test func aTrickledReplyEndsTheSendAtTheExchangeDeadline() async throws {
        let server = try TricklingServer()
        // A 1 s timeout gives a 6 s deadline for a small submission.
        let transport = HTTPTransport(workspace: "acme", baseURL: server.url, timeout: .seconds(1)) { "token" }
        let outcome = await transport.send(CancelledRequestTests.submission("trickled-1"))
        #expect(outcome == .unreachable(reason: "no complete reply within 6 s"))
        #expect(server.served.withLock { $0 } == 1)
    }

    @Test func aTrickledRequestIsStoppedOnTheWireAtItsDeadlineNotLeftRunning() async throws {
        let server = try TricklingServer()
        let transport = HTTPTransport(workspace: "acme", baseURL: server.url, timeout: .seconds(1)) { "token" }
        #expect(
            await transport.send(CancelledRequestTests.submission("trickled-2")) == .unreachable(reason: "no complete reply within 6 s"))
        // The client closed the connection (the trickle would otherwise run its whole minute).
        let closed = try await server.cutShort.reaches(1, within: 10)
        #expect(closed)
    }

    /// The deadline is a dispatch timer on a queue of its own, not a sleeping task and not a
    /// global queue: in a test run beside the torture runs, every thread of Swift's cooperative
    /// pool was busy for about a minute, and a task's deadline fired only after the trickle had
    /// ended with an error. On Linux the global queues share the pool's threads, so a timer
    /// there waited for CPU-bound tasks too. Every thread of the pool spins here until the
    /// answer comes: it must come while they spin. (Threads that sleep would not prove it:
    /// dispatch lends the global queues another thread once the pool's are blocked.)
    @Test func theDeadlinePassesOnTimeWhileEveryTaskThreadIsBusy() async throws {
        // The reply trickles for 2.5 s; the deadline is 1 s.
        let server = try TricklingServer(ticks: 25)
        let (collector, session) = Self.collectorSession()
        defer { session.finishTasksAndInvalidate() }
        let first = FirstAnswer()
        let endedBeforeTheAnswer = Mutex<Int?>(nil)
        collector.start(session.dataTask(with: server.url), limit: 1 << 20, deadline: 1) { result in
            endedBeforeTheAnswer.withLock { $0 = $0 ?? server.ended.withLock { $0 } }
            first.record(Self.words(result))
        }
        let sawTheAnswer = await BusyPool.spin { first.value != nil || server.ended.withLock { $0 } > 0 }
        #expect(sawTheAnswer)
        #expect(endedBeforeTheAnswer.withLock { $0 } == 0, "the deadline passed only after the reply had ended")
        #expect(first.value == "no complete reply within 1 s")
    }

    /// Every exchange's deadline shares one timer, armed for the earliest: an exchange with a
    /// shorter deadline, started while a longer one is waiting, is still cut at its own.
    @Test func aShorterDeadlineStartedAfterALongerOneStillEndsItsExchangeOnTime() async throws {
        let server = try TricklingServer(ticks: 25)
        let (collector, session) = Self.collectorSession()
        defer { session.finishTasksAndInvalidate() }
        let long = FirstAnswer()
        let short = FirstAnswer()
        // The trickles end (the server closes after 2.5 s) long before the first deadline.
        collector.start(session.dataTask(with: server.url), limit: 1 << 20, deadline: 60) { long.record(Self.words($0)) }
        collector.start(session.dataTask(with: server.url), limit: 1 << 20, deadline: 1) { short.record(Self.words($0)) }
        let ended = try await Self.poll(within: 20) { long.value != nil && short.value != nil }
        #expect(ended)
        #expect(short.value == "no complete reply within 1 s")
        #expect(long.value != nil && long.value != "no complete reply within 60 s")
    }

    /// Exchanges with deadlines in every order: each short one is cut at its own deadline,
    /// before the trickles end (3.5 s), and the long ones end with their trickles.
    @Test func deadlinesInAnyOrderEachEndTheirOwnExchange() async throws {
        let deadlines: [Double] = [30, 1, 2, 1, 30, 2]
        for (deadline, answer) in zip(deadlines, try await Self.answers(to: deadlines, trickleTicks: 35)) {
            if deadline < 30 {
                #expect(answer == "no complete reply within \(Int(deadline)) s")
            } else {
                #expect(answer != nil && answer != "no complete reply within 30 s")
            }
        }
    }

    /// A deadline handed to the collector itself is bounded, whatever it is: none traps (in
    /// the conversion to nanoseconds or the addition to the clock), a negative or zero one ends
    /// its exchange at once, and a huge or undefined one does not hold the shared timer from
    /// the others (the trickles, 1 s, end those exchanges first).
    @Test func anAbsurdDeadlineIsBoundedAndNeitherTrapsNorHoldsTheOthers() async throws {
        let deadlines: [Double] = [1e300, .nan, -5, .infinity, 0, -.infinity, .greatestFiniteMagnitude]
        for (deadline, answer) in zip(deadlines, try await Self.answers(to: deadlines, trickleTicks: 10)) {
            if deadline.isFinite && deadline <= 0 {
                #expect(answer == "no complete reply within 0 s")
            } else {
                #expect(answer != nil && answer?.hasPrefix("no complete reply within") == false)
            }
        }
    }

    /// Starts one exchange per deadline, all at once, against a server that trickles for
    /// `trickleTicks` tenths of a second, and returns each one's first answer in words (nil for
    /// one that had none within 20 s, which the caller's expectations then report).
    static func answers(to deadlines: [Double], trickleTicks: Int) async throws -> [String?] {
        let server = try TricklingServer(ticks: trickleTicks)
        let (collector, session) = collectorSession()
        defer { session.finishTasksAndInvalidate() }
        let answers = deadlines.map { _ in FirstAnswer() }
        for (deadline, answer) in zip(deadlines, answers) {
            collector.start(session.dataTask(with: server.url), limit: 1 << 20, deadline: deadline) { answer.record(words($0)) }
        }
        _ = try await poll(within: 20) { answers.allSatisfy { $0.value != nil } }
        return answers.map(\.value)
    }

    /// A collector and a session it is the delegate of (the caller invalidates the session).
    static func collectorSession() -> (ReplyCollector, URLSession) {
        let collector = ReplyCollector()
        return (collector, URLSession(configuration: .ephemeral, delegate: collector, delegateQueue: collector.makeDelegateQueue()))
    }

    /// A collector's answer in words: its error's description, or "a reply".
    static func words(_ result: Result<ReplyCollector.Reply, any Error>) -> String {
        switch result {
        case .success: "a reply"
        case .failure(let error): "\(error)"
        }
    }

    /// Whether `condition` holds within `seconds`, checked every 50 ms.
    static func poll(within seconds: Double, _ condition: () -> Bool) async throws -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if condition() { return true }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        return condition()
    }

    /// The first answer an exchange gave, in words.
    final class FirstAnswer: Sendable {
        private let answer = Mutex<String?>(nil)
        var value: String? { answer.withLock { $0 } }
        func record(_ text: String) { answer.withLock { $0 = $0 ?? text } }
    }

    @Test func aTrickledFeedPageOrHealthCheckEndsAtItsDeadlineToo() async throws {
        let server = try TricklingServer()
        let transport = HTTPTransport(workspace: "acme", baseURL: server.url, timeout: .seconds(1)) { "token" }
        guard case .unreachable(let reason) = await transport.fetchChanges(cursor: nil, limit: 10) else {
            Issue.record("a trickled page was taken as an answer")
            return
        }
        #expect(reason == "no complete reply within 6 s")
        #expect(await transport.probe() == false)
    }

    @Test func aTimeoutBelowOneSecondIsReadAsOneInsteadOfTimingOutAtOnce() async throws {
        // URLSession on Linux counts the timeout in whole seconds: 0.5 would end every request
        // before it left.
        let server = try TricklingServer()
        let transport = HTTPTransport(workspace: "acme", baseURL: server.url, timeout: .milliseconds(500)) { "token" }
        #expect(await transport.send(CancelledRequestTests.submission("short-1")) == .unreachable(reason: "no complete reply within 6 s"))
    }

    @Test func theDeadlineGrowsWithTheUploadAndIsBoundedForAbsurdTimeouts() {
        #expect(HTTPTransport.exchangeDeadline(timeout: 20, uploading: 0) == 120)
        #expect(HTTPTransport.exchangeDeadline(timeout: 20, uploading: 4 << 20) == 120 + 512)
        #expect(HTTPTransport.exchangeDeadline(timeout: .infinity, uploading: 0) == 360)
        #expect(HTTPTransport.exchangeDeadline(timeout: .nan, uploading: -5) == 360)
        #expect(HTTPTransport.exchangeDeadline(timeout: 1e300, uploading: .max) == 3_600 * 6 + Double(1 << 40) / 8_192)
        #expect(HTTPTransport.exchangeDeadline(timeout: -1, uploading: 0) > 0)
    }
}
