import FormSyncClient
import FormSyncModel
import Foundation
import Synchronization

/// An in-process transport for tests: it records every request in order and answers each from a
/// script of steps (done, transient, auth expired, conflict, rejected, or hang until released).
/// Requests no scripted step matches are acknowledged with fresh server ids.
public final class ScriptedTransport: OutboxTransport {
    /// What to answer one request with.
    public enum Step: Sendable {
        case outcome(DeliveryOutcome)
        /// Hold the request until `release(_:)`: a request on the wire with no reply yet.
        case hang
    }

    private struct Rule {
        var matches: @Sendable (OutboundRequest) -> Bool
        var step: Step
    }

    private struct State {
        var rules: [Rule] = []
        var requests: [OutboundRequest] = []
        var hanging: [(request: OutboundRequest, continuation: CheckedContinuation<DeliveryOutcome, Never>)] = []
        var inFlight = 0
        var peakInFlight = 0
        var nextServerID: Int64 = 1000
        var reachable = true
        var probes = 0
        var feed: [FeedStep] = []
        var feedCursors: [String?] = []
        var feedPrincipals: [String?] = []
        var hangingFeed: [CheckedContinuation<PullOutcome, Never>] = []
    }

    /// What to answer one request for a page of the change feed with.
    public enum FeedStep: Sendable {
        case outcome(PullOutcome)
        /// Hold the request until `releaseFeed(_:)`.
        case hang
    }

    private let state = Mutex(State())

    /// The workspace this transport serves; requests of any other are refused.
    public let workspace: String

    public init(workspace: String = "acme") {
        self.workspace = workspace
    }

    /// What `probe()` answers (true unless set).
    public var reachable: Bool {
        get { state.withLock { $0.reachable } }
        set { state.withLock { $0.reachable = newValue } }
    }

    /// How many times `probe()` was called.
    public var probeCount: Int { state.withLock { $0.probes } }

    /// Answers with `reachable`, counting the call.
    public func probe() async -> Bool {
        state.withLock {
            $0.probes += 1
            return $0.reachable
        }
    }

    /// Adds a step for the next request that `matches` (every request when omitted). Steps are
    /// used once each, in the order they were added.
    public func script(_ step: Step, when matches: @escaping @Sendable (OutboundRequest) -> Bool = { _ in true }) {
        state.withLock { $0.rules.append(Rule(matches: matches, step: step)) }
    }

    /// Shorthand for scripting an outcome.
    public func script(_ outcome: DeliveryOutcome, when matches: @escaping @Sendable (OutboundRequest) -> Bool = { _ in true }) {
        script(.outcome(outcome), when: matches)
    }

    /// Every request sent, in the order the transport received them.
    public var requests: [OutboundRequest] { state.withLock { $0.requests } }

    /// How many requests are held by `hang` now.
    public var hangingCount: Int { state.withLock { $0.hanging.count } }

    /// The most requests that were on the wire at once.
    public var peakInFlight: Int { state.withLock { $0.peakInFlight } }

    /// Answers every hanging request with `outcome`.
    public func release(_ outcome: DeliveryOutcome) {
        let hung = state.withLock { s -> [CheckedContinuation<DeliveryOutcome, Never>] in
            defer { s.hanging = [] }
            return s.hanging.map(\.continuation)
        }
        for continuation in hung { continuation.resume(returning: outcome) }
    }

    private func releaseHanging(_ attemptID: String, with outcome: DeliveryOutcome) {
        let hung = state.withLock { s -> CheckedContinuation<DeliveryOutcome, Never>? in
            guard let index = s.hanging.firstIndex(where: { $0.request.attemptID == attemptID }) else { return nil }
            return s.hanging.remove(at: index).continuation
        }
        hung?.resume(returning: outcome)
    }

    /// Records the request and answers it from the script.
    public func send(_ request: OutboundRequest) async -> DeliveryOutcome {
        guard request.workspace == workspace else {
            return .rejected(reason: "this transport serves workspace \(workspace), not \(request.workspace)", fieldErrors: [])
        }
        let step = state.withLock { s -> Step in
            s.requests.append(request)
            s.inFlight += 1
            s.peakInFlight = max(s.peakInFlight, s.inFlight)
            if let index = s.rules.firstIndex(where: { $0.matches(request) }) {
                return s.rules.remove(at: index).step
            }
            s.nextServerID += 1
            return .outcome(.done(ServerAcknowledgement(serverID: s.nextServerID, version: "v1")))
        }
        let outcome: DeliveryOutcome
        switch step {
        case .outcome(let scripted):
            await Task.yield()
            outcome = scripted
        case .hang:
            outcome = await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    state.withLock { $0.hanging.append((request, continuation)) }
                }
            } onCancel: {
                self.releaseHanging(request.attemptID, with: .unreachable(reason: "cancelled"))
            }
        }
        state.withLock { $0.inFlight -= 1 }
        return outcome
    }
}

extension ScriptedTransport {
    /// Adds a step for the next request for a page of the change feed; steps are used once
    /// each, in order. With none left, the feed answers an empty last page.
    public func scriptFeed(_ step: FeedStep) {
        state.withLock { $0.feed.append(step) }
    }

    /// The cursors the change feed was asked for, in order (nil: from the start).
    public var feedCursors: [String?] { state.withLock { $0.feedCursors } }

    /// Whose credential each feed request went under, in order (nil: nobody's).
    public var feedPrincipals: [String?] { state.withLock { $0.feedPrincipals } }

    /// Records whose credential the request went under, then answers as `fetchChanges`.
    public func fetchChanges(cursor: String?, limit: Int, as principal: String?) async -> PullOutcome {
        state.withLock { $0.feedPrincipals.append(principal) }
        return await fetchChanges(cursor: cursor, limit: limit)
    }

    /// How many feed requests are held by `hang` now.
    public var hangingFeedCount: Int { state.withLock { $0.hangingFeed.count } }

    /// Answers every hanging feed request with `outcome`.
    public func releaseFeed(_ outcome: PullOutcome) {
        let hung = state.withLock { s -> [CheckedContinuation<PullOutcome, Never>] in
            defer { s.hangingFeed = [] }
            return s.hangingFeed
        }
        for continuation in hung { continuation.resume(returning: outcome) }
    }

    /// Records the cursor and answers from the feed script.
    public func fetchChanges(cursor: String?, limit: Int) async -> PullOutcome {
        let step = state.withLock { s -> FeedStep in
            s.feedCursors.append(cursor)
            return s.feed.isEmpty ? .outcome(.page(ChangePage(changes: [], cursor: cursor ?? "c0", more: false))) : s.feed.removeFirst()
        }
        switch step {
        case .outcome(let outcome):
            await Task.yield()
            return outcome
        case .hang:
            return await withCheckedContinuation { continuation in
                state.withLock { $0.hangingFeed.append(continuation) }
            }
        }
    }
}
