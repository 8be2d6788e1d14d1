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
        var task: URLSessionTask
        /// When it is stopped (uptime, nanoseconds) and the deadline in seconds, for the error.
        var deadline: UInt64
        var seconds: Double
        /// Whether the deadline passed and the task was stopped (it stays until it ends).
        var stopped = false
    }

    private struct State {
        var exchanges: [Int: Exchange] = [:]
        /// One timer for every exchange's deadline, armed for the earliest, instead of one per
        /// request (each created, armed and cancelled, and a wakeup of dispatch's timer thread).
        /// It is a dispatch timer on a serial queue of its own, not a task and not a global
        /// queue, so a deadline passes on time even when every thread of Swift's cooperative
        /// pool is busy: on Linux the global queues share those threads, and a timer there
        /// waited for as long as CPU-bound tasks held them.
        let timer = DispatchSource.makeTimerSource(queue: ReplyCollector.deadlineQueue)
        /// When the timer fires next (uptime, nanoseconds); nil when it is not armed.
        var armedFor: UInt64?
    }

    private let state = Mutex(State())
    /// Where every collector's deadlines fire: a serial queue, which dispatch runs on a thread
    /// outside the cooperative pool.
    private static let deadlineQueue = DispatchQueue(label: "formsync.reply-deadlines")

    /// The serial dispatch queue under `makeDelegateQueue()`'s queues (an `OperationQueue`
    /// does not keep its underlying queue alive on Linux: the collector does).
    private let replies = DispatchQueue(label: "formsync.replies")

    /// The queue a session whose delegate is this collector should call it on: serial, over a
    /// dispatch queue of the collector's own. (URLSession's default, an `OperationQueue`, runs
    /// on the global queues, which on Linux share the cooperative pool's threads: with every
    /// one of them busy, a reply that had arrived waited there, and its deadline passed first.)
    package func makeDelegateQueue() -> OperationQueue {
        let queue = OperationQueue()
        queue.name = "formsync.replies"
        queue.maxConcurrentOperationCount = 1
        queue.underlyingQueue = replies
        return queue
    }

    package override init() {
        super.init()
        state.withLock { state in
            state.timer.setEventHandler { [weak self] in self?.sweep() }
            state.timer.activate()
        }
    }

    deinit {
        state.withLock { $0.timer.cancel() }
    }

    /// Starts `task` (created on this delegate's session, not yet resumed); `done` gets its
    /// reply, at most `limit` bytes of body, or its failure, exactly once, on a queue of the
    /// session's or the deadline's. The task is stopped `deadline` seconds after it starts if
    /// it is still going.
    package func start(
        _ task: URLSessionTask, limit: Int, deadline: Double, done: @escaping @Sendable (Result<Reply, any Error>) -> Void
    ) {
        let id = task.taskIdentifier
        let seconds = deadline.isFinite ? min(max(deadline, 0.001), 86_400) : 60
        let due = DispatchTime.now().uptimeNanoseconds.addingReportingOverflow(UInt64(seconds * 1e9)).partialValue
        state.withLock { state in
            state.exchanges[id] = Exchange(limit: limit, done: done, task: task, deadline: due, seconds: seconds)
            if state.armedFor.map({ due < $0 }) ?? true { arm(for: due, &state) }
        }
        task.resume()
    }

    /// Sets the timer to fire at `due` (under the lock, so that arming is never reordered).
    private func arm(for due: UInt64, _ state: inout State) {
        state.armedFor = due
        state.timer.schedule(deadline: DispatchTime(uptimeNanoseconds: due), leeway: .milliseconds(10))
    }

    /// Ends every exchange whose deadline passed, and arms the timer for the next deadline.
    private func sweep() {
        let now = DispatchTime.now().uptimeNanoseconds
        let expired = state.withLock { state -> [Exchange] in
            var expired: [Exchange] = []
            var next: UInt64?
            for (id, exchange) in state.exchanges where !exchange.stopped {
                if exchange.deadline <= now {
                    expired.append(exchange)
                    state.exchanges[id]?.done = nil
                    state.exchanges[id]?.stopped = true
                } else {
                    next = min(next ?? exchange.deadline, exchange.deadline)
                }
            }
            if let next { arm(for: next, &state) } else { state.armedFor = nil }
            return expired
        }
        for exchange in expired {
            exchange.done?(.failure(DeadlinePassed(seconds: exchange.seconds)))
            exchange.task.cancel()
        }
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
        let done = state.withLock { state -> (@Sendable (Result<Reply, any Error>) -> Void)? in
            defer { state.exchanges[id]?.done = nil }
            return state.exchanges[id]?.done
        }
        done?(result)
    }

    // No `didReceive response` callback: it pauses every transfer until the delegate queue
    // answers it, which cost 40–200 µs of CPU per request (isolated, against 560 µs for the
    // whole request), so a declared length is checked with the first bytes of the body.
    package func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let id = dataTask.taskIdentifier
        let declared = dataTask.response?.expectedContentLength ?? -1
        let overflow = state.withLock { state -> ReplyTooLarge? in
            guard state.exchanges[id]?.done != nil, let limit = state.exchanges[id]?.limit, let count = state.exchanges[id]?.body.count
            else { return nil }
            let overflow =
                declared > Int64(limit)
                ? ReplyTooLarge(limit: limit, declared: declared)
                : count + data.count > limit ? ReplyTooLarge(limit: limit, declared: nil) : nil
            if overflow == nil { state.exchanges[id]?.body.append(data) } else { state.exchanges[id]?.body = Data() }
            return overflow
        }
        if let overflow { answer(id, with: .failure(overflow)) }
    }

    package func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        // The timer stays armed for the earliest deadline; finding nothing due, it stops then.
        guard let exchange = state.withLock({ $0.exchanges.removeValue(forKey: task.taskIdentifier) }) else { return }
        guard let done = exchange.done else { return }
        if let error {
            done(.failure(error))
        } else if let response = task.response as? HTTPURLResponse {
            done(.success((response, exchange.body)))
        } else {
            done(.failure(URLError(.badServerResponse)))
        }
    }

    package func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
