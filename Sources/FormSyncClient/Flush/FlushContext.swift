import Foundation

/// What a flush pass (`FlushPass`) may touch of its outbox, and nothing more: the items' state
/// machine, the transport and its settings, the clock, the events, and the few things an answer
/// changes outside the state machine (the network's state, a stash copy, a waiting `submit`).
/// The outbox is the one conformer; a pass runs isolated to it, on the database's thread.
protocol FlushContext: Actor {
    var lifecycle: ItemLifecycle { get }
    var transport: any OutboxTransport { get }
    var configuration: Outbox.Configuration { get }
    var observers: ObservationHub { get }
    var workspace: String { get }
    /// The clock (milliseconds), callable from the pass's requests without a hop to the outbox.
    var clock: @Sendable () -> Int64 { get }
    /// Where the pass's requests run: the database's thread, so an answer costs no thread hop.
    var requestExecutor: any TaskExecutor { get }
    /// Asks the app for a new token after one expired; true when there is one.
    func renewToken() async -> Bool
    /// Runs `body` as one transaction of the given durability.
    func write<T>(_ durability: OutboxDatabase.Durability, _ body: () throws -> T) throws -> T
    /// Records whether a server answered.
    func setNetworkDown(_ down: Bool, reason: String)
    /// What a settled attempt leaves to do: its stash copy deleted, its waiting `submit` answered.
    func finish(_ settled: ItemLifecycle.Settled)
}

extension Outbox: FlushContext {
    var clock: @Sendable () -> Int64 { environment.now }
    var requestExecutor: any TaskExecutor { database.taskExecutor }
    func renewToken() async -> Bool { await refreshAuthentication() }

    func finish(_ settled: ItemLifecycle.Settled) {
        if let removedFile = settled.removedFile { stash.remove(removedFile) }
        if let submitResult = settled.submitResult { resumeWaiters(settled.id, with: submitResult) }
    }
}
