import Synchronization

/// Where a flush pass's requests leave their answers. The pass takes everything that came
/// back at once and records it in one transaction; when nothing has, it waits for the next.
final class FlushInbox: Sendable {
    /// One attempt's answer, as it came back from the transport.
    struct Arrival: Sendable {
        var lease: ItemLifecycle.Lease
        var outcome: DeliveryOutcome
        var details: DeliveryDetails
        var milliseconds: Int64
    }

    private struct State {
        var arrivals: [Arrival] = []
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())
    /// How many times the caller's thread may run what is queued behind it before the caller waits.
    private static let yields = 4

    /// Leaves an answer and wakes the pass if it waits.
    func put(_ arrival: Arrival) {
        state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.arrivals.append(arrival)
            defer { state.waiter = nil }
            return state.waiter
        }?.resume()
    }

    /// Every answer that came back since the last call, waiting for one when there is none;
    /// `waited` says whether it had to (answers are not coming faster than the pass records
    /// them). Not cancellable on purpose: a cancelled pass still waits for its requests (which
    /// its cancellation ends) to hand their items back. It runs in the caller's isolation (the
    /// outbox's thread): a plain `async` method of a class would hop to the global pool and
    /// back on every turn of the pass.
    func takeAll(isolation: isolated (any Actor)? = #isolation) async -> (arrivals: [Arrival], waited: Bool) {
        // Requests that answer at once (a transport in the same process, a reply already in
        // its buffer) run on this thread, queued behind the caller: they go first, for a few
        // turns of the thread.
        for _ in 0..<Self.yields {
            if let ready = takeReady() { return (ready, false) }
            await Task.yield()
        }
        if let ready = takeReady() { return (ready, false) }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.arrivals.isEmpty { state.waiter = continuation }
                return !state.arrivals.isEmpty
            }
            if ready { continuation.resume() }
        }
        return (takeReady() ?? [], true)
    }

    private func takeReady() -> [Arrival]? {
        state.withLock { state in
            guard !state.arrivals.isEmpty else { return nil }
            defer { state.arrivals = [] }
            return state.arrivals
        }
    }
}
