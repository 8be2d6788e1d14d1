import FormSyncModel
/// Exponential backoff with full jitter: the n-th retry waits a random time in
/// [0, min(cap, base × 2^(n−1))), drawn per item so that a crowd of devices coming back online
/// does not retry in step; a server's Retry-After is a floor; after `maxAttempts` the item is
/// parked as exhausted.
public struct RetryPolicy: Sendable, Equatable {
    public var baseDelayMilliseconds: Int64
    public var maxDelayMilliseconds: Int64
    /// Counted attempts after which an item is parked as exhausted instead of retried.
    public var maxAttempts: Int

    public init(baseDelayMilliseconds: Int64 = 1000, maxDelayMilliseconds: Int64 = 120_000, maxAttempts: Int = 10) {
        self.baseDelayMilliseconds = baseDelayMilliseconds
        self.maxDelayMilliseconds = maxDelayMilliseconds
        self.maxAttempts = maxAttempts
    }

    /// The wait before the next attempt, after `attempts` counted attempts (≥ 1).
    public func delay(afterAttempts attempts: Int, random: Double, retryAfterMilliseconds: Int64?) -> Int64 {
        let exponent = min(max(attempts - 1, 0), 40)
        let (scaled, overflow) = baseDelayMilliseconds.multipliedReportingOverflow(by: Int64(1) << exponent)
        let ceiling = overflow ? maxDelayMilliseconds : min(maxDelayMilliseconds, scaled)
        let jittered = Int64(Double(ceiling) * min(max(random, 0), 1))
        return max(jittered, retryAfterMilliseconds ?? 0)
    }
}
