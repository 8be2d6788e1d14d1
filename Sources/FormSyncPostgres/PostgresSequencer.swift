import Foundation
import Synchronization

/// Numbers the change feed off the write path. A write commits its changes unnumbered and
/// returns; it only asks this node's sequencer for a pass, which numbers everything committed
/// and not yet numbered (any node's) in one transaction under the feed's lock, and announces it
/// (`NOTIFY`). Writes that commit while a pass runs share the next one, so the feed's lock and
/// its commit are paid once per pass, not once per write.
///
/// Nothing depends on a pass having run: every reader of the feed numbers what is waiting before
/// it reads, so a device that pulls right after its write sees it. A pass that fails (the
/// database restarted, the lock was not granted in time) is tried again a second later, up to a
/// minute of failures in a row.
final class PostgresSequencer: Sendable {
    private struct State {
        var running = false
        var again = false
        var retryPending = false
        /// Failed passes in a row: retries stop after `maxRetries` (readers number what waits).
        var failures = 0
    }

    /// The most passes retried after failures in a row, a second apart.
    static let maxRetries = 60

    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "formsync.pg-sequencer")
    private let pass: @Sendable () throws -> Void

    /// A sequencer whose passes run `pass` (the store's `sequenceChanges`).
    init(pass: @escaping @Sendable () throws -> Void) {
        self.pass = pass
    }

    /// Asks for a pass: now, or right after the one under way.
    func request() {
        let start = state.withLock { state -> Bool in
            if state.running {
                state.again = true
                return false
            }
            state.running = true
            return true
        }
        if start { queue.async { self.run() } }
    }

    private func run() {
        while true {
            var failed = false
            do { try pass() } catch { failed = true }
            let next = state.withLock { state -> (again: Bool, retry: Bool) in
                if state.again {
                    state.again = false
                    return (true, false)
                }
                state.running = false
                state.failures = failed ? state.failures + 1 : 0
                guard failed, state.failures <= Self.maxRetries, !state.retryPending else { return (false, false) }
                state.retryPending = true
                return (false, true)
            }
            if next.again { continue }
            if next.retry {
                queue.asyncAfter(deadline: .now() + .seconds(1)) {
                    self.state.withLock { $0.retryPending = false }
                    self.request()
                }
            }
            return
        }
    }
}
