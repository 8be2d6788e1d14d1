import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The delegate of `HTTPTransport`'s session: it gathers each request's reply up to a bound,
/// ends each request at its deadline, and refuses every redirect.
///
/// A reply is never taken on trust. One that declares more than `limit` bytes, or grows past
/// it, fails its caller at once (`ReplyTooLarge`) and the rest of it is dropped as it arrives,
/// so a captive portal, a proxy or a hostile server cannot make the device hold hundreds of
/// megabytes (URLSession's own `data(for:)` buffers whatever comes). The transfer itself runs
/// on until it ends or its deadline: on Linux, a `.cancel` disposition does not stop a transfer
/// at all, and `URLSessionTask.cancel()` on a transfer under way took effect only after
/// URLSession had buffered what it had queued (233 MB resident after a cancel at 1 MB, against
/// 37 MB for the same 300 MB reply drained and dropped).
///
/// Every request ends by its deadline at the latest (`DeadlinePassed`): a server (or a proxy)
/// that trickles its reply a byte at a time never trips URLSession's timeout on Linux, which
/// counts only the time between bytes, and `timeoutIntervalForResource` is not honoured there.
/// The deadline bounds the transfer, not the caller's wait: an oversized reply's drain ends
/// there too.
///
/// A redirect is refused, so the request (and its `Authorization`) never reaches another host:
/// the 3xx itself comes back and is classified as "no FormSync server answered".
package final class ReplyCollector: NSObject, URLSessionDataDelegate, Sendable {
    /// A reply that declared or sent more than the transport accepts.
    package struct ReplyTooLarge: Error, CustomStringConvertible {
        package var limit: Int
        /// What the reply's `Content-Length` declared, when it did.
        package var declared: Int64?
        package var description: String {
            if let declared { return "the reply declared \(declared) bytes, more than the \(limit) accepted; the rest was dropped" }
            return "the reply grew past the \(limit) bytes accepted; the rest was dropped"
        }
    }

    /// An exchange that outlived its deadline: no complete reply came in time.
    package struct DeadlinePassed: Error, CustomStringConvertible {
        package var seconds: Double
        package var description: String { "no complete reply within \(Int(seconds)) s" }
    }

    /// What a finished exchange hands back: the response's head and its body.
    package typealias Reply = (response: HTTPURLResponse, body: Data)

    private struct Exchange {
        var limit: Int
        var body = Data()
        /// Who waits for the reply; nil once answered (an oversized reply drains on unanswered).
        var done: (@Sendable (Result<Reply, any Error>) -> Void)?
        var deadline: DeadlineTimer
    }

    private let exchanges = Mutex<[Int: Exchange]>([:])

    package override init() {}

    /// Starts `task` (created on this delegate's session, not yet resumed); `done` gets its
    /// reply, at most `limit` bytes of body, or its failure, exactly once, on a queue of the
    /// session's or the deadline's. The task is stopped `deadline` seconds after it starts if
    /// it is still going.
    package func start(
        _ task: URLSessionTask, limit: Int, deadline: Double, done: @escaping @Sendable (Result<Reply, any Error>) -> Void
    ) {
        let id = task.taskIdentifier
        let seconds = deadline.isFinite ? min(max(deadline, 0.001), 86_400) : 60
        let timer = DeadlineTimer(seconds: seconds) { [self] in
            answer(id, with: .failure(DeadlinePassed(seconds: seconds)))
            task.cancel()
        }
        exchanges.withLock { $0[id] = Exchange(limit: limit, done: done, deadline: timer) }
        timer.resume()
        task.resume()
    }

    /// `start`, awaited.
    package func run(_ task: URLSessionTask, limit: Int, deadline: Double) async throws -> Reply {
        try await withCheckedThrowingContinuation { continuation in
            start(task, limit: limit, deadline: deadline) { continuation.resume(with: $0) }
        }
    }

    /// Gives the exchange's caller `result` unless it already has one; the exchange itself
    /// stays until its transfer ends.
    private func answer(_ id: Int, with result: Result<Reply, any Error>) {
        let done = exchanges.withLock { exchanges -> (@Sendable (Result<Reply, any Error>) -> Void)? in
            defer { exchanges[id]?.done = nil }
            return exchanges[id]?.done
        }
        done?(result)
    }

    // No `didReceive response` callback: it pauses every transfer until the delegate queue
    // answers it, which cost 40–200 µs of CPU per request (isolated, against 560 µs for the
    // whole request), so a declared length is checked with the first bytes of the body.
    package func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let id = dataTask.taskIdentifier
        let declared = dataTask.response?.expectedContentLength ?? -1
        let overflow = exchanges.withLock { exchanges -> ReplyTooLarge? in
            guard exchanges[id]?.done != nil, let limit = exchanges[id]?.limit, let count = exchanges[id]?.body.count else { return nil }
            let overflow =
                declared > Int64(limit) ? ReplyTooLarge(limit: limit, declared: declared)
                : count + data.count > limit ? ReplyTooLarge(limit: limit, declared: nil) : nil
            if overflow == nil { exchanges[id]?.body.append(data) } else { exchanges[id]?.body = Data() }
            return overflow
        }
        if let overflow { answer(id, with: .failure(overflow)) }
    }

    package func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let exchange = exchanges.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        exchange.deadline.cancel()
        guard let done = exchange.done else { return }
        if let error {
            done(.failure(error))
        } else if let response = task.response as? HTTPURLResponse {
            done(.success((response, exchange.body)))
        } else {
            done(.failure(URLError(.badServerResponse)))
        }
    }

    /// A one-shot timer on a dispatch queue, not a task: a deadline must pass on time even when
    /// every thread of Swift's cooperative pool is busy (seen in a test run beside the torture
    /// runs: a sleeping task's deadline came 60 s late, after the reply it was meant to cut).
    /// Cancelling it releases its handler at once.
    final class DeadlineTimer: @unchecked Sendable {
        private let source: any DispatchSourceTimer

        init(seconds: Double, fire: @escaping @Sendable () -> Void) {
            source = DispatchSource.makeTimerSource(queue: .global())
            source.setEventHandler(handler: fire)
            source.schedule(deadline: .now() + .milliseconds(Int(seconds * 1000)))
        }

        func resume() { source.resume() }
        func cancel() { source.cancel() }
    }

    package func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
