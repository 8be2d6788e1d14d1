import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The delegate of `HTTPTransport`'s session: it gathers each request's reply up to a bound
/// and refuses every redirect.
///
/// A reply is never taken on trust. One that declares more than `limit` bytes, or grows past
/// it, fails its caller at once (`ReplyTooLarge`) and the rest of it is dropped as it arrives,
/// so a captive portal, a proxy or a hostile server cannot make the device hold hundreds of
/// megabytes (URLSession's own `data(for:)` buffers whatever comes). The transfer itself runs
/// on until it ends or its drain time (the exchange's deadline) is up: on Linux, a `.cancel` disposition does
/// not stop a transfer at all, and `URLSessionTask.cancel()` on a transfer under way took
/// effect only after URLSession had buffered what it had queued (233 MB resident after a
/// cancel at 1 MB, against 37 MB for the same 300 MB reply drained and dropped).
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

    /// What a finished exchange hands back: the response's head and its body.
    package typealias Reply = (response: HTTPURLResponse, body: Data)

    private struct Exchange {
        var limit: Int
        var body = Data()
        var done: @Sendable (Result<Reply, any Error>) -> Void
    }

    private let exchanges = Mutex<[Int: Exchange]>([:])

    package override init() {}

    /// Starts `task` (created on this delegate's session, not yet resumed); `done` gets its
    /// reply, at most `limit` bytes of body, or its failure, exactly once, on the session's
    /// delegate queue. A reply past `limit` is drained for at most `drainSeconds` after the
    /// exchange started, then stopped.
    package func start(
        _ task: URLSessionTask, limit: Int, drainSeconds: Double, done: @escaping @Sendable (Result<Reply, any Error>) -> Void
    ) {
        let drain = drainSeconds.isFinite ? min(max(drainSeconds, 0), 86_400) : 60
        let started = DispatchTime.now()
        exchanges.withLock {
            $0[task.taskIdentifier] = Exchange(limit: limit, done: { [task] result in
                if case .failure(let error) = result, error is ReplyTooLarge {
                    DispatchQueue.global().asyncAfter(deadline: started + .milliseconds(Int(drain * 1000))) { task.cancel() }
                }
                done(result)
            })
        }
        task.resume()
    }

    /// `start`, awaited.
    package func run(_ task: URLSessionTask, limit: Int, drainSeconds: Double) async throws -> Reply {
        try await withCheckedThrowingContinuation { continuation in
            start(task, limit: limit, drainSeconds: drainSeconds) { continuation.resume(with: $0) }
        }
    }

    /// Ends `task`'s exchange now (its deadline passed): the request stops on the wire. Runs on
    /// a dispatch queue, never inside a task's cancellation handler (see `CancellationShield`).
    static func stop(_ task: URLSessionTask) {
        DispatchQueue.global().async { task.cancel() }
    }

    private func finish(_ id: Int, with result: Result<Reply, any Error>) {
        let exchange = exchanges.withLock { $0.removeValue(forKey: id) }
        exchange?.done(result)
    }

    // No `didReceive response` callback: it pauses every transfer until the delegate queue
    // answers it, which cost 40–200 µs of CPU per request (isolated, against 560 µs for the
    // whole request), so a declared length is checked with the first bytes of the body.
    package func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let id = dataTask.taskIdentifier
        let declared = dataTask.response?.expectedContentLength ?? -1
        let overflow = exchanges.withLock { exchanges -> ReplyTooLarge? in
            guard let limit = exchanges[id]?.limit, let count = exchanges[id]?.body.count else { return nil }
            if declared > Int64(limit) { return ReplyTooLarge(limit: limit, declared: declared) }
            guard count + data.count <= limit else { return ReplyTooLarge(limit: limit, declared: nil) }
            exchanges[id]?.body.append(data)
            return nil
        }
        if let overflow { finish(id, with: .failure(overflow)) }
    }

    package func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let id = task.taskIdentifier
        let exchange = exchanges.withLock { $0.removeValue(forKey: id) }
        guard let exchange else { return }
        if let error {
            exchange.done(.failure(error))
        } else if let response = task.response as? HTTPURLResponse {
            exchange.done(.success((response, exchange.body)))
        } else {
            exchange.done(.failure(URLError(.badServerResponse)))
        }
    }

    package func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
