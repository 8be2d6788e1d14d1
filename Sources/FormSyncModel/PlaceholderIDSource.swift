import Synchronization

/// Mints placeholder ids: negative, unique across process restarts, and exactly representable in
/// every JSON reader (magnitude below 2^53). Each id is `-(milliseconds × 1000 + n)`, so a
/// restart a millisecond later cannot repeat an earlier id; the counter keeps ids issued within
/// one millisecond apart, and the source never goes backwards even if the clock does.
public final class PlaceholderIDSource: Sendable {
    /// The largest magnitude a placeholder may have: 2^53 − 1.
    public static let maxMagnitude: Int64 = (1 << 53) - 1

    private let milliseconds: @Sendable () -> Int64
    private let last = Mutex<Int64>(0)

    /// `milliseconds` is the wall clock in ms since 1970, injected so tests are deterministic.
    /// `issuedBefore` is the magnitude of the largest id already in use (for example the most
    /// negative placeholder an outbox holds), so that even a burst of more than 1000 ids per
    /// millisecond before a restart is never repeated after it.
    public init(milliseconds: @escaping @Sendable () -> Int64, issuedBefore: Int64 = 0) {
        self.milliseconds = milliseconds
        last.withLock { $0 = issuedBefore }
    }

    /// The next placeholder id.
    public func next() -> Int64 {
        // A clock before 1970 or past the year 2255 (as a broken clock may read) is pinned, so
        // the product never traps; the counter keeps ids unique either way.
        let candidate = min(max(milliseconds(), 0), Self.maxMagnitude / 1000) * 1000
        let magnitude = last.withLock { last -> Int64 in
            last = max(candidate, last + 1)
            return last
        }
        precondition(magnitude <= Self.maxMagnitude, "placeholder id past 2^53; the clock is wrong")
        return -magnitude
    }
}
