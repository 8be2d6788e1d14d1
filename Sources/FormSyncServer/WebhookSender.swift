import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Posts one delivery to a receiver and says what came back, for the dispatcher's thread (it
/// blocks its caller, never a thread of Swift's cooperative pool). Nothing of a reply is taken
/// on trust: a redirect is never followed (the delivery goes to the URL registered, nowhere
/// else), at most `maxReplyBytes` of a body are kept, and an exchange ends by its deadline
/// however slowly the receiver trickles.
final class WebhookSender: NSObject, URLSessionDataDelegate, Sendable {
    /// What one post came to.
    struct Reply: Sendable, Equatable {
        /// The receiver's status; nil when none answered in time.
        var status: Int?
        /// `Retry-After` in seconds, when the receiver sent one that reads as a number.
        var retryAfter: Int64?
        var error: String?
    }

    /// How much of a receiver's reply is read (the status is what matters).
    static let maxReplyBytes = 4096

    private struct Exchange {
        var status: Int?
        var retryAfter: Int64?
        var received = 0
        var done: (@Sendable (Reply) -> Void)?
    }

    private let exchanges = Mutex<[Int: Exchange]>([:])
    private let queue = DispatchQueue(label: "formsync.webhook-replies")
    private let session = Mutex<URLSession?>(nil)

    override init() {
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        configuration.httpMaximumConnectionsPerHost = 8
        let operations = OperationQueue()
        operations.maxConcurrentOperationCount = 1
        operations.underlyingQueue = queue
        session.withLock { $0 = URLSession(configuration: configuration, delegate: self, delegateQueue: operations) }
    }

    /// Ends the session (the dispatcher stopped).
    func invalidate() {
        session.withLock {
            $0?.invalidateAndCancel()
            $0 = nil
        }
    }

    /// Posts `body` to `url` with `headers`; waits at most `deadline` seconds.
    func post(_ url: URL, body: Data, headers: [String: String], deadline: Double) -> Reply {
        guard let session = session.withLock({ $0 }) else { return Reply(status: nil, retryAfter: nil, error: "the sender stopped") }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = body
        request.timeoutInterval = max(1, deadline.rounded(.up))
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let task = session.dataTask(with: request)
        let id = task.taskIdentifier
        let answer = Mutex<Reply?>(nil)
        let answered = DispatchSemaphore(value: 0)
        exchanges.withLock {
            $0[id] = Exchange(done: { reply in
                answer.withLock { $0 = reply }
                answered.signal()
            })
        }
        task.resume()
        if answered.wait(timeout: .now() + deadline) == .timedOut {
            finish(id, Reply(status: nil, retryAfter: nil, error: "no reply within \(Int(deadline)) s"))
            task.cancel()
            answered.wait()
        }
        return answer.withLock { $0 } ?? Reply(status: nil, retryAfter: nil, error: "no reply")
    }

    private func finish(_ id: Int, _ reply: Reply) {
        let done = exchanges.withLock { exchanges -> (@Sendable (Reply) -> Void)? in
            let done = exchanges[id]?.done
            exchanges[id]?.done = nil
            return done
        }
        done?(reply)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let http = response as? HTTPURLResponse
        let retryAfter = (http?.value(forHTTPHeaderField: "Retry-After")).flatMap { text -> Int64? in
            guard text.utf8.count <= 10, text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
            return Int64(text)
        }
        exchanges.withLock {
            $0[dataTask.taskIdentifier]?.status = http?.statusCode
            $0[dataTask.taskIdentifier]?.retryAfter = retryAfter
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let enough = exchanges.withLock { exchanges -> Bool in
            exchanges[dataTask.taskIdentifier]?.received += data.count
            return (exchanges[dataTask.taskIdentifier]?.received ?? 0) > Self.maxReplyBytes
        }
        // The status is known: a receiver that keeps talking is not listened to.
        if enough, let exchange = exchanges.withLock({ $0[dataTask.taskIdentifier] }) {
            finish(dataTask.taskIdentifier, Reply(status: exchange.status, retryAfter: exchange.retryAfter, error: nil))
            dataTask.cancel()
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let exchange = exchanges.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        guard let exchange, let done = exchange.done else { return }
        if let status = exchange.status {
            done(Reply(status: status, retryAfter: exchange.retryAfter, error: nil))
        } else {
            done(Reply(status: nil, retryAfter: nil, error: error.map { "\($0.localizedDescription)" } ?? "no reply"))
        }
    }

    /// A redirect is refused: the 3xx itself is the reply, and the delivery is not made.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
