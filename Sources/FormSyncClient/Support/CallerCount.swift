import Synchronization

/// A count of callers, readable from any thread: how many `enqueue` calls are under way, so an
/// enqueue can tell whether others wait to share its fsync.
final class CallerCount: Sendable {
    let value = Atomic<Int>(0)
}
