import FormSyncHTTP
import FormSyncProtocol
import Foundation
import Synchronization

/// Long-polls of the change feed (`GET /changes?wait=<seconds>`, docs/PROTOCOL.md "Waiting for
/// changes"): a request whose page is empty is held, without a thread of its own, until a change
/// its caller may see commits in its workspace (a write this node answered, or another node's,
/// told by the store's change signal), or its wait ends; either way it is then answered as an
/// ordinary `GET /changes`. Bounded: at most `maxWaiters` held at once (past it a request is
/// answered at once), each for at most the server's longest wait.
package final class FeedWaiters: Sendable {
    private struct Waiter {
        var workspace: String
        /// The request without its `wait`: answered as an ordinary page.
        var request: HTTPRequest
        /// For a device's own feed, which leaves out the types that come by subscription: the
        /// feed's end when it was held. A change of those types past it answers the request
        /// (empty), and the device's pull then reads its subscriptions.
        var mark: Int64?
        var reply: @Sendable (HTTPResponse?) -> Void
    }

    private struct State {
        var waiters: [UInt64: Waiter] = [:]
        var next: UInt64 = 0
        /// Answers a request as the server does; set while the server serves.
        var respond: (@Sendable (HTTPRequest, @escaping @Sendable (HTTPResponse?) -> Void) -> Void)?
        var listener: (any ChangeListener)?
        var tally = Tally()
    }

    /// What became of the requests held so far, for tests and benchmarks to tell a reply a
    /// change woke from one its deadline ended.
    struct Tally: Equatable {
        var answeredByChange = 0
        var answeredAtDeadline = 0
        /// Looks taken again after a change in a held request's workspace.
        var rechecks = 0
    }

    private let context: ServerContext
    private let state = Mutex(State())
    /// Re-checks and deadlines, one at a time, off the HTTP server's workers.
    private let queue = DispatchQueue(label: "formsync.feed-waiters")
    /// The most requests held at once.
    static let maxWaiters = 10_000

    init(context: ServerContext) {
        self.context = context
    }

    /// Starts holding requests, answering them through `respond`; with a store whose other nodes
    /// commit changes (PostgreSQL), listens for their signal too.
    func start(respond: @escaping @Sendable (HTTPRequest, @escaping @Sendable (HTTPResponse?) -> Void) -> Void) {
        let listener = context.store.changeListener { [weak self] workspace in self?.changed(workspace: workspace) }
        state.withLock {
            $0.respond = respond
            $0.listener = listener
        }
        context.settings.holdsPulls = true
    }

    /// Stops: nothing more is held; those held are dropped with their connections.
    func stop() {
        context.settings.holdsPulls = false
        let listener = state.withLock { state -> (any ChangeListener)? in
            state.respond = nil
            state.waiters = [:]
            defer { state.listener = nil }
            return state.listener
        }
        listener?.stop()
    }

    /// How many requests are held now.
    package var count: Int { state.withLock { $0.waiters.count } }

    var tally: Tally { state.withLock { $0.tally } }

    /// The longest wait held, in seconds (the server's setting).
    var maxWaitSeconds: Int {
        get { context.settings.maxFeedWaitSeconds }
        set { context.settings.maxFeedWaitSeconds = newValue }
    }

    /// Holds `request` when it asks to wait and its page is empty now; false when it is to be
    /// answered at once (no wait, something to send, a refusal, the server at its bound).
    func hold(_ request: HTTPRequest, reply: @escaping @Sendable (HTTPResponse?) -> Void) -> Bool {
        guard let (seconds, bare) = Self.waiting(request), seconds > 0 else { return false }
        let wait = min(seconds, context.settings.maxFeedWaitSeconds)
        let feed = ChangeFeed(context: context)
        // (The mark is read before the look: a change between them answers at the first recheck.)
        let mark = feed.subscribedChangesMark(bare)
        guard wait > 0, let workspace = feed.emptyPageWorkspace(bare) else { return false }
        let id = state.withLock { state -> UInt64? in
            guard state.respond != nil, state.waiters.count < Self.maxWaiters else { return nil }
            state.next += 1
            state.waiters[state.next] = Waiter(workspace: workspace, request: bare, mark: mark, reply: reply)
            return state.next
        }
        guard let id else { return false }
        queue.asyncAfter(deadline: .now() + .seconds(wait)) { [self] in answer(id, byChange: false) }
        // A change that committed between the look above and the registration is not missed.
        queue.async { [self] in recheck(id) }
        return true
    }

    /// A change committed in `workspace` (nil: in some workspace): every request held there
    /// looks again, and those with something to see are answered.
    func changed(workspace: String?) {
        let ids = state.withLock { state in
            state.waiters.filter { workspace == nil || $0.value.workspace == workspace }.map(\.key)
        }
        guard !ids.isEmpty else { return }
        queue.async { [self] in
            for id in ids { recheck(id) }
        }
    }

    private func recheck(_ id: UInt64) {
        guard let waiter = state.withLock({ $0.waiters[id] }) else { return }
        let feed = ChangeFeed(context: context)
        let empty = feed.emptyPageWorkspace(waiter.request) != nil
        let subscribed = empty && waiter.mark.map { feed.hasSubscribedChange(waiter.request, after: $0) } == true
        state.withLock { $0.tally.rechecks += 1 }
        if !empty || subscribed { answer(id, byChange: true) }
    }

    /// Answers a held request as an ordinary page, once (whoever takes it from the table).
    private func answer(_ id: UInt64, byChange: Bool) {
        let taken = state.withLock { state -> (Waiter, @Sendable (HTTPRequest, @escaping @Sendable (HTTPResponse?) -> Void) -> Void)? in
            guard let waiter = state.waiters.removeValue(forKey: id), let respond = state.respond else { return nil }
            if byChange { state.tally.answeredByChange += 1 } else { state.tally.answeredAtDeadline += 1 }
            return (waiter, respond)
        }
        guard let (waiter, respond) = taken else { return }
        respond(waiter.request, waiter.reply)
    }

    /// A `GET /changes` request's `wait` in seconds and the request without it; nil when it
    /// has none (or one `ChangeFeed` refuses).
    static func waiting(_ request: HTTPRequest) -> (seconds: Int, bare: HTTPRequest)? {
        guard let query = request.query else { return nil }
        var seconds: Int?
        var kept: [Substring] = []
        for pair in query.split(separator: "&") {
            if pair.hasPrefix("wait=") {
                guard seconds == nil, let value = ChangeFeed.waitSeconds(String(pair.dropFirst(5))) else { return nil }
                seconds = value
            } else {
                kept.append(pair)
            }
        }
        guard let seconds else { return nil }
        var bare = request
        bare.query = kept.isEmpty ? nil : kept.joined(separator: "&")
        return (seconds, bare)
    }
}
