import FormSyncModel
/// Exponential backoff with jitter: the n-th retry waits a random time in
/// [step/2, step], step = min(cap, base × 2^(n−1)), drawn per item so that a crowd of devices
/// coming back online does not retry in step, and never zero; a server's Retry-After is a
/// floor, itself capped (`maxRetryAfterMilliseconds`) so that no reply can hold an item for
/// long; after `maxAttempts` the item is parked as exhausted.
public struct RetryPolicy: Sendable, Equatable {
    public var baseDelayMilliseconds: Int64
    public var maxDelayMilliseconds: Int64
    /// Counted attempts after which an item is parked as exhausted instead of retried.
    public var maxAttempts: Int
    /// The longest a server's `Retry-After` is honoured (default one hour).
    public var maxRetryAfterMilliseconds: Int64

    public init(
        baseDelayMilliseconds: Int64 = 1000, maxDelayMilliseconds: Int64 = 120_000, maxAttempts: Int = 10,
        maxRetryAfterMilliseconds: Int64 = 3_600_000
    ) {
        self.baseDelayMilliseconds = max(1, baseDelayMilliseconds)
        self.maxDelayMilliseconds = max(self.baseDelayMilliseconds, maxDelayMilliseconds)
        self.maxAttempts = max(1, maxAttempts)
        self.maxRetryAfterMilliseconds = max(0, maxRetryAfterMilliseconds)
    }

    /// The step after `attempts` counted attempts (≥ 1): base × 2^(attempts−1), capped.
    func step(afterAttempts attempts: Int) -> Int64 {
        let exponent = min(max(attempts - 1, 0), 40)
        let (scaled, overflow) = baseDelayMilliseconds.multipliedReportingOverflow(by: Int64(1) << exponent)
        return overflow ? maxDelayMilliseconds : min(maxDelayMilliseconds, scaled)
    }

    /// The wait before the next attempt, after `attempts` counted attempts (≥ 1).
    public func delay(afterAttempts attempts: Int, random: Double, retryAfterMilliseconds: Int64?) -> Int64 {
        let ceiling = step(afterAttempts: attempts)
        let floor = ceiling / 2
        let fraction = random.isFinite ? min(max(random, 0), 1) : 0.5
        let jittered = floor + Int64(Double(ceiling - floor) * fraction)
        let retryAfter = min(max(retryAfterMilliseconds ?? 0, 0), maxRetryAfterMilliseconds)
        return max(jittered, retryAfter, 1)
    }
}
