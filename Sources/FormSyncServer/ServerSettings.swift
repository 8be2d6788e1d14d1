import FormSyncProtocol
import Synchronization

/// What tests, benchmarks and `formsync serve` switch on a server, and the hooks crash tests
/// set: shared by every part of the server, safe to change while it serves.
final class ServerSettings: Sendable {
    private let deferredFiles = Atomic<Bool>(true)
    private let fileLookup = Atomic<Bool>(true)
    private let limits = Mutex(SyncServer.UploadLimits())
    private let refreshLifetime = Atomic<Int64>(ServerSettings.defaultRefreshLifetimeMilliseconds)
    private let hooks = Mutex(Hooks())
    private let webhooks = Mutex(SyncServer.WebhookPolicy())

    private struct Hooks {
        var afterCommit: (@Sendable (Int) -> Void)?
        var afterFeedPage: (@Sendable (Int) -> Void)?
        var feedPages = 0
    }

    /// Whether submissions may name files by digest before their bytes (`deferred-files`).
    var acceptsDeferredFiles: Bool {
        get { deferredFiles.load(ordering: .relaxed) }
        set { deferredFiles.store(newValue, ordering: .relaxed) }
    }

    /// Whether `GET /files/sha-256/<hex>` is answered (`file-lookup`).
    var offersFileLookup: Bool {
        get { fileLookup.load(ordering: .relaxed) }
        set { fileLookup.store(newValue, ordering: .relaxed) }
    }

    /// The features announced in `GET /health` and in `FormSync-Features`.
    var features: [String] {
        (acceptsDeferredFiles ? [Feature.deferredFiles.rawValue] : []) + (offersFileLookup ? [Feature.fileLookup.rawValue] : [])
            + (holdsPulls ? [Feature.waitForChanges.rawValue] : []) + [Feature.subscriptions.rawValue, Feature.compactFeed.rawValue]
    }

    private let holding = Atomic<Bool>(false)

    /// Whether `GET /changes?wait=` is held (`wait-for-changes`): while the server serves HTTP
    /// (a server answering in process, as the simulation's, answers every pull at once).
    var holdsPulls: Bool {
        get { holding.load(ordering: .relaxed) }
        set { holding.store(newValue, ordering: .relaxed) }
    }

    private let feedWait = Atomic<Int>(ServerSettings.defaultMaxFeedWaitSeconds)

    /// The longest `GET /changes?wait=` the server holds, in seconds (a longer wait is served as
    /// this one): below the idle timeouts of the proxies and clients between it and a device.
    var maxFeedWaitSeconds: Int {
        get { feedWait.load(ordering: .relaxed) }
        set { feedWait.store(max(0, newValue), ordering: .relaxed) }
    }

    static let defaultMaxFeedWaitSeconds = 25

    /// How long a refresh token lives unused (each refresh issues one that lives as long again).
    var refreshLifetimeMilliseconds: Int64 {
        get { refreshLifetime.load(ordering: .relaxed) }
        set { refreshLifetime.store(newValue, ordering: .relaxed) }
    }

    /// Thirty days.
    static let defaultRefreshLifetimeMilliseconds: Int64 = 30 * 24 * 3600 * 1000

    var webhookPolicy: SyncServer.WebhookPolicy {
        get { webhooks.withLock { $0 } }
        set { webhooks.withLock { $0 = newValue } }
    }

    var uploadLimits: SyncServer.UploadLimits {
        get { limits.withLock { $0 } }
        set { limits.withLock { $0 = newValue } }
    }

    var afterCommit: (@Sendable (Int) -> Void)? {
        get { hooks.withLock { $0.afterCommit } }
        set { hooks.withLock { $0.afterCommit = newValue } }
    }

    var afterFeedPage: (@Sendable (Int) -> Void)? {
        get { hooks.withLock { $0.afterFeedPage } }
        set { hooks.withLock { $0.afterFeedPage = newValue } }
    }

    /// Counts a page of the change feed served; returns the hook to call and the pages so far.
    func countFeedPage() -> (hook: (@Sendable (Int) -> Void)?, pages: Int) {
        hooks.withLock { hooks in
            hooks.feedPages += 1
            return (hooks.afterFeedPage, hooks.feedPages)
        }
    }
}
