import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The delegate of `HTTPTransport`'s session: it gathers each request's reply up to a bound
/// and refuses every redirect.
///
/// A reply is never taken on trust. One that grows past `limit` bytes fails its caller at once
/// (`ReplyTooLarge`) and the rest of it is dropped as it arrives, so a captive portal, a proxy
/// or a hostile server cannot make the device hold hundreds of megabytes (URLSession's own
/// `data(for:)` buffers whatever comes). One that declares more than `limit` is also stopped on
/// the wire at once. A reply of unknown length is not: on Linux, cancelling such a transfer
/// made URLSession buffer what it had queued (measured: 233 MB resident after a cancel at
/// 1 MB, against 37 MB for the same 300 MB reply drained and dropped), so it drains until it
/// ends or the exchange's deadline stops it. (A `.cancel` disposition does not stop a transfer
/// there at all; `URLSessionTask.cancel()` does.)
///
/// A redirect is refused, so the request (and its `Authorization`) never reaches another host:
/// the 3xx itself comes back and is classified as "no FormSync server answered".
final class ReplyCollector: NSObject, URLSessionDataDelegate, Sendable {
    /// A reply that declared or sent more than the transport accepts.
    struct ReplyTooLarge: Error, CustomStringConvertible {
        var limit: Int
        /// What the reply's `Content-Length` declared, when it did.
        var declared: Int64?
        var description: String {
            if let declared { return "the reply declared \(declared) bytes, more than the \(limit) accepted; it was stopped" }
            return "the reply grew past the \(limit) bytes accepted; the rest was dropped"
        }
    }

    private struct Exchange {
        var limit: Int
        var response: HTTPURLResponse?
        var body = Data()
        var continuation: CheckedContinuation<(HTTPURLResponse, Data), any Error>
    }

    private let exchanges = Mutex<[Int: Exchange]>([:])

    /// Runs `task` (created on this delegate's session, not yet resumed) and returns its reply,
    /// at most `limit` bytes of body.
    func run(_ task: URLSessionTask, limit: Int) async throws -> (HTTPURLResponse, Data) {
        try await withCheckedThrowingContinuation { continuation in
            exchanges.withLock { $0[task.taskIdentifier] = Exchange(limit: limit, continuation: continuation) }
            task.resume()
        }
    }

    /// Ends `task`'s exchange now (its caller gave up waiting): the request stops on the wire.
    /// Runs on a dispatch queue, never inside a task's cancellation handler (see
    /// `CancellationShield`).
    static func stop(_ task: URLSessionTask) {
        DispatchQueue.global().async { task.cancel() }
    }

    private func finish(_ id: Int, with result: Result<(HTTPURLResponse, Data), any Error>) {
        let exchange = exchanges.withLock { $0.removeValue(forKey: id) }
        exchange?.continuation.resume(with: result)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let id = dataTask.taskIdentifier
        let declared = response.expectedContentLength
        let limit = exchanges.withLock { exchanges -> Int? in
            exchanges[id]?.response = response as? HTTPURLResponse
            return exchanges[id]?.limit
        }
        completionHandler(.allow)
        if let limit, declared > Int64(limit) {
            finish(id, with: .failure(ReplyTooLarge(limit: limit, declared: declared)))
            dataTask.cancel()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let id = dataTask.taskIdentifier
        let overflow = exchanges.withLock { exchanges -> Int? in
            guard let limit = exchanges[id]?.limit, let count = exchanges[id]?.body.count else { return nil }
            guard count + data.count <= limit else { return limit }
            exchanges[id]?.body.append(data)
            return nil
        }
        if let overflow { finish(id, with: .failure(ReplyTooLarge(limit: overflow, declared: nil))) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let id = task.taskIdentifier
        let exchange = exchanges.withLock { $0.removeValue(forKey: id) }
        guard let exchange else { return }
        if let error {
            exchange.continuation.resume(throwing: error)
        } else if let response = exchange.response ?? task.response as? HTTPURLResponse {
            exchange.continuation.resume(returning: (response, exchange.body))
        } else {
            exchange.continuation.resume(throwing: URLError(.badServerResponse))
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
