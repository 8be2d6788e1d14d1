import FormSyncClient
import Synchronization

/// The simulation's virtual time for a `SyncEngine`: the engine's waits (backoff between
/// probes, the wait for the next due item, the wait after a failed token refresh) sleep here,
/// and the simulation wakes them as it moves its clock, so hours of engine behaviour run in
/// milliseconds and the same seed waits the same way on every machine.
final class VirtualTimers: Sendable {
    private struct Sleeper {
        var wake: Int64
        var id: Int
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var nextID = 0
        var sleepers: [Sleeper] = []
        var cancelledEarly: Set<Int> = []
    }

    private let state = Mutex(State())
    private let now: @Sendable () -> Int64

    /// `now` is the true (virtual) time: a sleep lasts its duration whatever the device's own
    /// clock says.
    init(now: @escaping @Sendable () -> Int64) {
        self.now = now
    }

    /// Suspends until the simulation's clock passes `milliseconds` from now, or the task is
    /// cancelled.
    func sleep(_ milliseconds: Int64) async {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        let wake = now().addingClamped(max(0, milliseconds))
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if s.cancelledEarly.remove(id) != nil { return true }
                    s.sleepers.append(Sleeper(wake: wake, id: id, continuation: continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { s -> CheckedContinuation<Void, Never>? in
                if let index = s.sleepers.firstIndex(where: { $0.id == id }) { return s.sleepers.remove(at: index).continuation }
                s.cancelledEarly.insert(id)
                return nil
            }
            continuation?.resume()
        }
    }

    /// How many sleeps are waiting.
    var waiting: Int { state.withLock { $0.sleepers.count } }

    /// When the earliest waiting sleep ends, nil when none waits.
    var earliest: Int64? { state.withLock { $0.sleepers.map(\.wake).min() } }

    /// Ends every sleep due by `time`; returns how many.
    @discardableResult
    func wake(through time: Int64) -> Int {
        let due = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            let due = s.sleepers.filter { $0.wake <= time }.map(\.continuation)
            s.sleepers.removeAll { $0.wake <= time }
            return due
        }
        for continuation in due { continuation.resume() }
        return due.count
    }
}
