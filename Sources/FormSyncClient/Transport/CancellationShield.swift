import Synchronization

/// Runs an exchange that its caller's cancellation must not reach, while a cancelled caller
/// still stops waiting for it at once.
///
/// Cancelling a task that awaits Linux URLSession can deadlock: the task's cancellation handler
/// runs under the task's status lock and waits synchronously on the session's work queue,
/// which can be waiting for that lock; the canceller never returns and no request of that
/// session completes again, timeouts included (swift-corelibs-foundation #5412). So a caller's
/// cancellation never reaches the request: the exchange reports to a handoff from URLSession's
/// own queue and ends by its reply, its timeout or its deadline (`ReplyCollector`), and a
/// cancelled caller gets `CancellationError` and leaves. The server's idempotency ledger
/// answers a resend of a request that went on to be committed.
enum CancellationShield {
    /// Starts an exchange with `start`, which reports its result once through the callback it
    /// is given, and waits for the first of that result and the caller's cancellation.
    static func run<T: Sendable>(start: (_ done: @escaping @Sendable (Result<T, any Error>) -> Void) -> Void) async throws -> T {
        let handoff = Handoff<T>()
        start { handoff.finish($0) }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { handoff.wait($0) }
        } onCancel: {
            handoff.finish(.failure(CancellationError()))
        }
    }

    /// The first result (the exchange's or the caller's cancellation) to the one waiter.
    final class Handoff<T: Sendable>: Sendable {
        private struct State {
            /// The first result given; once set, later ones are dropped.
            var result: Result<T, any Error>?
            var waiter: CheckedContinuation<T, any Error>?
        }

        private let state = Mutex(State())

        func wait(_ continuation: CheckedContinuation<T, any Error>) {
            let ready = state.withLock { state -> Result<T, any Error>? in
                if state.result == nil { state.waiter = continuation }
                return state.result
            }
            if let ready { continuation.resume(with: ready) }
        }

        func finish(_ result: Result<T, any Error>) {
            let waiter = state.withLock { state -> CheckedContinuation<T, any Error>? in
                guard case .none = state.result else { return nil }
                state.result = result
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(with: result)
        }
    }
}
