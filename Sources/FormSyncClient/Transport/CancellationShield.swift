import Dispatch
import Synchronization

/// Runs an exchange that its caller's cancellation must not reach, while a cancelled caller
/// still stops waiting for it at once.
///
/// Cancelling a task that awaits Linux URLSession can deadlock: the task's cancellation handler
/// runs under the task's status lock and waits synchronously on the session's work queue,
/// which can be waiting for that lock; the canceller never returns and no request of that
/// session completes again, timeouts included (swift-corelibs-foundation #5412). So a caller's
/// cancellation never reaches the request: the exchange reports to a handoff from URLSession's
/// own queue and ends by its reply, its timeout or its deadline, and a cancelled caller gets
/// `CancellationError` and leaves. The server's idempotency ledger answers a resend of a
/// request that went on to be committed.
///
/// The caller also stops waiting at `deadline`: a server (or a proxy) that trickles its reply
/// a byte at a time never trips URLSession's timeout on Linux, which counts only the time
/// between bytes, and `timeoutIntervalForResource` is not honoured there. `onDeadline` then
/// runs, outside any task's cancellation handler, to stop the exchange itself.
enum CancellationShield {
    /// What a caller gets when the exchange outlived its deadline.
    struct DeadlinePassed: Error, CustomStringConvertible {
        var seconds: Double
        var description: String { "no complete reply within \(Int(seconds)) s" }
    }

    /// Starts an exchange with `start`, which reports its result once through the callback it
    /// is given, and waits for the first of that result, `deadline` seconds passing (then
    /// `onDeadline` runs) and the caller's cancellation.
    static func run<T: Sendable>(
        deadline seconds: Double, onDeadline: @escaping @Sendable () -> Void = {},
        start: (_ done: @escaping @Sendable (Result<T, any Error>) -> Void) -> Void
    ) async throws -> T {
        let handoff = Handoff<T>()
        let bounded = min(max(seconds, 0.001), 86_400)
        // The deadline bounds the exchange itself, whether or not its caller still waits.
        let timer = DeadlineTimer(seconds: bounded) {
            handoff.finish(.failure(DeadlinePassed(seconds: bounded)))
            onDeadline()
        }
        start { result in
            timer.cancel()
            handoff.finish(result)
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { handoff.wait($0) }
        } onCancel: {
            handoff.finish(.failure(CancellationError()))
        }
    }

    /// A one-shot timer on a dispatch queue, not a task: a deadline must pass on time even when
    /// every thread of Swift's cooperative pool is busy (seen in a test run beside the torture
    /// runs: a sleeping task's deadline came 60 s late, after the reply it was meant to cut).
    /// Cancelling it releases its handler at once.
    final class DeadlineTimer: @unchecked Sendable {
        private let source: any DispatchSourceTimer

        init(seconds: Double, fire: @escaping @Sendable () -> Void) {
            source = DispatchSource.makeTimerSource(queue: .global())
            source.setEventHandler(handler: fire)
            source.schedule(deadline: .now() + .milliseconds(Int(seconds * 1000)))
            source.resume()
        }

        func cancel() { source.cancel() }
    }

    /// The first result (the exchange's, the deadline's or the caller's cancellation) to the one
    /// waiter.
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
