import FormSyncServer
import Foundation
import Synchronization

/// A node's ear for the changes other nodes commit: one thread with a connection of its own
/// that `LISTEN`s to the sequencer's channel and hands each workspace it hears of to
/// `changed`. It is listening when made (unless the database cannot be reached then), so that
/// a request held once the node serves hears of every change committed after it was held. A
/// broken connection is opened again (after a second, then up to half a minute apart); what was
/// committed meanwhile is seen by the next look of each long-poll, at its deadline at the latest.
final class PostgresChangeListener: ChangeListener, @unchecked Sendable {
    private let url: String
    private let changed: @Sendable (String) -> Void
    private let stopped = Atomic<Bool>(false)
    private let ended = DispatchSemaphore(value: 0)

    init(url: String, changed: @escaping @Sendable (String) -> Void) {
        self.url = url
        self.changed = changed
        let first = try? Self.listening(url)
        let thread = Thread { [self] in run(first) }
        thread.name = "formsync.pg-listen"
        thread.start()
    }

    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        ended.wait()
    }

    /// A connection that listens to the channel.
    private static func listening(_ url: String) throws -> PostgresConnection {
        let connection = try PostgresConnection(url: url, timeoutSeconds: 5)
        try connection.run("LISTEN \(PostgresServerStore.changeChannel)")
        return connection
    }

    private func run(_ first: PostgresConnection?) {
        defer { ended.signal() }
        var pause = 1.0
        var ready = first
        while !stopped.load(ordering: .acquiring) {
            do {
                let connection = try ready ?? Self.listening(url)
                ready = nil
                pause = 1
                while !stopped.load(ordering: .acquiring) {
                    // A short look, so that stop() is not kept waiting.
                    for workspace in Set(try connection.notifications(waitingUpTo: 0.5)) { changed(workspace) }
                }
            } catch {
                var waited = 0.0
                while waited < pause, !stopped.load(ordering: .acquiring) {
                    Thread.sleep(forTimeInterval: 0.1)
                    waited += 0.1
                }
                pause = min(pause * 2, 30)
            }
        }
    }
}

extension PostgresServerStore {
    package func changeListener(_ changed: @escaping @Sendable (String) -> Void) -> (any ChangeListener)? {
        PostgresChangeListener(url: url, changed: changed)
    }
}
