import Foundation
import Synchronization

/// Who watches an outbox, and what they are told: its events (`SyncEvent`), its snapshots
/// (`OutboxSnapshot`) and its work signals. Any thread may subscribe, unsubscribe or publish;
/// every stream keeps only its newest values, so a slow reader misses intermediate ones and
/// never slows the outbox. Publishing to nobody costs one lock.
final class ObservationHub: Sendable {
    private let events = Listeners<SyncEvent>(buffer: 1000)
    private let snapshots = Listeners<OutboxSnapshot>(buffer: 1)
    private let work = Listeners<Void>(buffer: 1)

    /// Every event from now on.
    func eventStream() -> AsyncStream<SyncEvent> { events.stream() }

    func emit(_ event: SyncEvent) { events.yield(event) }

    /// Snapshots from now on, starting with `current`.
    func snapshotStream(starting current: OutboxSnapshot) -> AsyncStream<OutboxSnapshot> {
        snapshots.stream(first: current)
    }

    /// Whether anyone listens to snapshots (skips building snapshots nobody reads).
    var hasSnapshotListeners: Bool { snapshots.isObserved }

    func publish(_ snapshot: OutboxSnapshot) { snapshots.yield(snapshot) }

    /// A signal each time work may have become due.
    func workStream() -> AsyncStream<Void> { work.stream() }

    func signalWork() { work.yield(()) }
}

/// The continuations of one kind of stream, behind a lock.
private final class Listeners<Value: Sendable>: Sendable {
    private let buffer: Int
    private let continuations = Mutex<[UUID: AsyncStream<Value>.Continuation]>([:])

    init(buffer: Int) {
        self.buffer = buffer
    }

    func stream(first: Value? = nil) -> AsyncStream<Value> {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(buffer))
        if let first { continuation.yield(first) }
        continuations.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in _ = self?.continuations.withLock { $0.removeValue(forKey: id) } }
        return stream
    }

    func yield(_ value: Value) {
        let targets = continuations.withLock { Array($0.values) }
        for continuation in targets { continuation.yield(value) }
    }

    var isObserved: Bool { continuations.withLock { !$0.isEmpty } }
}
