/// What one `SyncEngine.sync(for:)` did both ways, and what is left.
public struct SyncReport: Sendable, Equatable, CustomStringConvertible {
    /// The passes' outcomes, added up (`remaining` is the last pass's).
    public var pushed = FlushReport()
    /// How many passes it ran.
    public var passes = 0
    /// The pull at the end, when it ran.
    public var pulled: PullReport?
    /// Everything was delivered and the pull caught up: nothing is left for a later sync.
    public var finished = false
    /// Items still to go out without a person acting (queued, retrying, waiting for the network).
    public var remaining = 0
    /// Items parked for a person (rejected, conflict, exhausted, blocked).
    public var needsAttention = 0
    /// Why it ended before finishing, in words (the deadline, the token, cancellation).
    public var stoppedBecause: String?

    public init() {}

    mutating func add(_ pass: FlushReport) {
        passes += 1
        pushed.sent += pass.sent
        pushed.rejected += pass.rejected
        pushed.exhausted += pass.exhausted
        pushed.conflicts += pass.conflicts
        pushed.blocked += pass.blocked
        pushed.retrying += pass.retrying
        pushed.remaining = pass.remaining
        pushed.authenticationRequired = pass.authenticationRequired
        pushed.offline = pass.offline
    }

    public var description: String {
        "\(finished ? "finished" : "not finished"): \(passes) passes (\(pushed)); pulled \(pulled.map { "\($0.upserted) upserted, \($0.deleted) deleted\($0.caughtUp ? ", caught up" : "")" } ?? "nothing"); "
            + "\(remaining) left to send, \(needsAttention) need attention" + (stoppedBecause.map { "; stopped: \($0)" } ?? "")
    }
}
