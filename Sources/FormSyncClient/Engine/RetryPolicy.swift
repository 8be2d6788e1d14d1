import FormSyncModel

/// Exponential backoff with jitter: the n-th retry waits a random time in
/// [step/2, step], step = min(cap, base × 2^(n−1)), drawn per item so that a crowd of devices
/// coming back online does not retry in step, and never zero; a server's Retry-After is a
/// floor, itself capped (`maxRetryAfter`) so that no reply can hold an item for long; after
/// `maxAttempts` the item is parked as exhausted.
public struct RetryPolicy: Sendable, Equatable {
    var baseDelayMilliseconds: Int64
    var maxDelayMilliseconds: Int64
    /// Counted attempts after which an item is parked as exhausted instead of retried.
    public var maxAttempts: Int
    var maxRetryAfterMilliseconds: Int64

    /// The first step of the backoff (at least a millisecond).
    public var baseDelay: Duration { .milliseconds(baseDelayMilliseconds) }
    /// The largest step (at least `baseDelay`).
    public var maxDelay: Duration { .milliseconds(maxDelayMilliseconds) }
    /// The longest a server's `Retry-After` is honoured (default one hour).
    public var maxRetryAfter: Duration { .milliseconds(maxRetryAfterMilliseconds) }

    public init(
        baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(120), maxAttempts: Int = 10,
        maxRetryAfter: Duration = .seconds(3600)
    ) {
        self.baseDelayMilliseconds = max(1, baseDelay.clampedMilliseconds)
        self.maxDelayMilliseconds = max(self.baseDelayMilliseconds, maxDelay.clampedMilliseconds)
        self.maxAttempts = max(1, maxAttempts)
        self.maxRetryAfterMilliseconds = max(0, maxRetryAfter.clampedMilliseconds)
    }

    /// The step after `attempts` counted attempts (≥ 1): base × 2^(attempts−1), capped.
    func step(afterAttempts attempts: Int) -> Int64 {
        let exponent = min(max(attempts - 1, 0), 40)
        let (scaled, overflow) = baseDelayMilliseconds.multipliedReportingOverflow(by: Int64(1) << exponent)
        return overflow ? maxDelayMilliseconds : min(maxDelayMilliseconds, scaled)
    }

    /// The wait before the next attempt, after `attempts` counted attempts (≥ 1).
    func delay(afterAttempts attempts: Int, random: Double, retryAfterMilliseconds: Int64?) -> Int64 {
        let ceiling = step(afterAttempts: attempts)
        let floor = ceiling / 2
        let fraction = random.isFinite ? min(max(random, 0), 1) : 0.5
        let jittered = floor + Int64(Double(ceiling - floor) * fraction)
        let retryAfter = min(max(retryAfterMilliseconds ?? 0, 0), maxRetryAfterMilliseconds)
        return max(jittered, retryAfter, 1)
    }
}
