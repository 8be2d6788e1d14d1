import FormSyncModel

/// What one flush did, and what is left. A badge, a spinner and a "needs attention" list are
/// different questions, so each count is separate.
public struct FlushReport: Sendable, Equatable, CustomStringConvertible {
    /// Acknowledged during this flush.
    public var sent = 0
    /// Parked as rejected during this flush.
    public var rejected = 0
    /// Parked after running out of attempts during this flush.
    public var exhausted = 0
    /// Parked as conflicts during this flush.
    public var conflicts = 0
    /// Held back during this flush because something they depend on needs attention.
    public var blocked = 0
    /// Waiting for a later retry time after a transient failure during this flush.
    public var retrying = 0
    /// Items of this workspace that can still go out without a person acting.
    public var remaining = 0
    /// The flush stopped because the token could not be refreshed; nothing was dropped.
    public var authenticationRequired = false
    /// The flush stopped because no server answered (no network, a captive portal, a
    /// redirect): nothing was counted against any item; they wait for the network.
    public var offline = false
    /// The server revoked the device's credentials: nothing goes out any more, and what had not
    /// gone out is sealed (`SyncState.sealed`); the reason, as the outbox recorded it.
    public var deviceRevoked: String?

    public init() {}

    public var description: String {
        "sent \(sent), rejected \(rejected), exhausted \(exhausted), conflicts \(conflicts), blocked \(blocked), retrying \(retrying), remaining \(remaining)"
            + (authenticationRequired ? ", authentication required" : "") + (offline ? ", offline" : "")
            + (deviceRevoked.map { ", device revoked (\($0))" } ?? "")
    }
}
