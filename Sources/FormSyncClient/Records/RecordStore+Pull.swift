import FormSyncModel
import FormSyncProtocol
import Foundation

/// What a pull needs of the outbox it runs for: the current workspace's transport and the
/// outbox's hooks (token refresh, network state, events).
struct PullContext: Sendable {
    var transport: any OutboxTransport
    var refreshAuthentication: @Sendable () async -> Bool
    var maxAuthRefreshes: Int
    var now: @Sendable () -> Int64
    var observers: ObservationHub
    var networkDown: @Sendable (String) async -> Void
}

/// Which feed a pull reads: the device's own, or one of its subscriptions'.
enum PulledFeed: Sendable, Equatable {
    case own
    case subscription(name: String, query: SubscriptionQuery)
}

extension RecordStore {
    /// Pulls for the current workspace (see `Outbox.pull`); concurrent calls share one pull.
    /// The feeds are read in their priority's order (the device's own at 0, before
    /// subscriptions of the same priority); then expired subscriptions end, and records no
    /// subscription holds any more are evicted.
    func pull(pageSize: Int, limits: PullLimits, context: PullContext, wait: Duration = .zero) async throws -> PullReport {
        if let running = pulling { return try await running.value }
        let task = Task { try await self.pullEveryFeed(pageSize: pageSize, limits: limits, context: context, wait: wait) }
        pulling = task
        defer { pulling = nil }
        let report = try await task.value
        context.observers.emit(.pulled(upserted: report.upserted, deleted: report.deleted, caughtUp: report.caughtUp))
        return report
    }

    private func pullEveryFeed(pageSize: Int, limits: PullLimits, context: PullContext, wait: Duration) async throws -> PullReport {
        let view = self.view
        let now = context.now()
        try database.transaction(.normal) { try endExpiredSubscriptions(view: view, now: now) }
        let subscriptions = try OutboxDatabase.mapping { try store.subscriptions(view: view) }
        var feeds: [(priority: Int, feed: PulledFeed)] = [(0, .own)]
        for row in subscriptions {
            guard let query = try? JSONDecoder().decode(SubscriptionQuery.self, from: Data(row.query.utf8)) else { continue }
            feeds.append((row.priority, .subscription(name: row.name, query: query)))
        }
        // A stable sort: the own feed stays first among priority 0.
        let ordered = feeds.enumerated().sorted { ($0.element.priority, -$0.offset) > ($1.element.priority, -$1.offset) }.map(
            \.element.feed)
        var report = PullReport()
        report.caughtUp = true
        for feed in ordered {
            // Only the device's own feed is held open (`wait`): its types are the ones announced.
            let part = try await runPull(
                pageSize: pageSize, limits: limits, context: context, wait: feed == .own ? wait : .zero, feed: feed)
            guard view == self.view else { return part }
            report.absorb(part)
            if part.stoppedBecause != nil { return report }
        }
        // (Also when the last subscription just expired, or the app's update made a type one
        // that comes by subscription: what no subscription holds leaves.)
        if !recordTypes.subscribedTypes.isEmpty { try evictUnheldRecords(view: view) }
        return report
    }

    /// `wait`: how long the server may hold the first page while it is empty (a long-poll).
    private func runPull(
        pageSize: Int, limits: PullLimits, context: PullContext, wait: Duration, feed: PulledFeed
    ) async throws
        -> PullReport
    {
        var wait = wait
        var report = PullReport()
        let clock = ContinuousClock()
        let started = clock.now
        var bytes = 0
        let view = self.view
        let principal = self.principal
        let transport = context.transport
        let recordTypes = self.recordTypes
        var held: (name: String, query: SubscriptionQuery)?
        if case .subscription(let name, let query) = feed { held = (name, query) }
        let subscription = held
        let subscriptionQuery = held?.query
        var cursor = try OutboxDatabase.mapping {
            try subscription.map { try store.subscriptionCursor(view: view, name: $0.name) } ?? store.pullCursor(view: view)
        }
        var fromScratch = false
        var refreshed = 0
        // A pull into an empty store (a new device) inserts its records without the key
        // indexes, and builds each of them once, sorted, when it ends however it ends: a
        // record is then one B-tree insert instead of one per indexed field. A process killed
        // meanwhile gets them back at the next open (`reindex`).
        var keysDropped = false
        let keySlots = recordTypes.names.compactMap { recordTypes[$0]?.indexedFields.count }.max() ?? 0
        defer {
            if keysDropped { try? database.transaction(.normal) { try store.ensureRecordKeyIndexes() } }
        }
        // Pages are fetched and read ahead while the one before them commits (`FeedPrefetch`):
        // nothing of them is stored before it has, and a pull that ends drops them. The first
        // page is small, so that the first records arrive without waiting for a page the size of
        // the rest; only the first request of the pull may be held (`wait`).
        var prefetch: FeedPrefetch?
        defer { prefetch?.cancel() }
        while !Task.isCancelled {
            if prefetch == nil {
                let held = wait
                wait = .zero
                prefetch = FeedPrefetch(
                    cursor: cursor, firstLimit: min(pageSize, Self.firstPageSize), limit: pageSize,
                    fetch: { cursor, limit, first in
                        await Self.fetchOutcome(
                            transport: transport, cursor: cursor, limit: limit, principal: principal,
                            wait: first ? held : .zero, subscription: subscriptionQuery)
                    },
                    read: { page in await Self.readPage(page, recordTypes: recordTypes) })
            }
            guard let read = await prefetch?.next() else { break }
            let outcome = read.outcome
            guard view == self.view else { break }  // switched meanwhile: this pull's pages belong elsewhere
            switch outcome {
            case .page(let page):
                if page.stalls(after: cursor) {
                    report.stoppedBecause = .failed(
                        reason: "the feed says there is more but does not advance past \(cursor ?? "the start")", retryAfter: nil)
                    return report
                }
                // Every record was read by its type before anything is stored (off the database's
                // thread, as the page arrived): a page holding one this build cannot read is not
                // committed, and the cursor stays where it was.
                let fetched = read.fetched ?? FetchedPage()
                if let unreadable = fetched.unreadable {
                    report.stoppedBecause = .failed(reason: unreadable, retryAfter: nil)
                    return report
                }
                CrashPoint.pullPage.reach()
                try writeAnnouncing {
                    if fromScratch {
                        if let subscription {
                            try store.dropSubscriptionRecords(view: view, name: subscription.name)
                        } else {
                            try store.clearRecords(view: view)
                        }
                    }
                    if cursor == nil, !keysDropped, page.more, keySlots > 0, try !store.hasRecords() {
                        try store.dropRecordKeyIndexes(slots: keySlots)
                        keysDropped = true
                    }
                    var tombstones = try store.hasTombstones(view: view)
                    // Records are written in batches of many rows; a removal writes the batch
                    // before it first, so that each record's changes apply in the feed's order.
                    var batch: [OutboxStore.RecordRow] = []
                    func writeBatch() throws {
                        guard !batch.isEmpty else { return }
                        let written = try store.upsertRecords(view: view, batch)
                        for index in written.indices where written[index] { noteRecord(batch[index].type, batch[index].id) }
                        batch.removeAll(keepingCapacity: true)
                    }
                    for (offset, change) in page.changes.enumerated() {
                        if let fields = change.fields {
                            // A subscription brings only its type; the own feed none of the
                            // types that come by subscription (a server that sends them is
                            // not believed: nothing would ever evict them).
                            guard subscription.map({ $0.query.type == change.type }) ?? !fetched.subscribed[offset] else { continue }
                            if tombstones { try store.removeTombstone(view: view, type: change.type, id: change.id) }
                            batch.append(
                                OutboxStore.RecordRow(
                                    type: change.type, id: change.id, version: change.version, payload: fields, keys: fetched.keys[offset]))
                            if let subscription {
                                try store.holdRecord(view: view, subscription: subscription.name, type: change.type, id: change.id)
                            }
                            report.upserted += 1
                            continue
                        }
                        try writeBatch()
                        if change.isOutside {
                            // Left this subscription; evicted after the pull unless another holds it.
                            guard let subscription, subscription.query.type == change.type else { continue }
                            try store.releaseRecord(view: view, subscription: subscription.name, type: change.type, id: change.id)
                        } else {
                            try removeRecord(type: change.type, id: change.id, view: view)
                            tombstones = true  // the record may come back later in this page
                            try store.releaseRecord(view: view, subscription: nil, type: change.type, id: change.id)
                            report.deleted += 1
                        }
                    }
                    try writeBatch()
                    if let subscription {
                        try store.setSubscriptionCursor(page.cursor, view: view, name: subscription.name)
                    } else {
                        if !page.reviews.isEmpty { try store.addReviews(page.reviews, view: view, at: context.now()) }
                        try store.setPullCursor(page.cursor, view: view, at: context.now())
                    }
                }
                fromScratch = false
                cursor = page.cursor
                if subscription == nil {
                    if let request = page.supportRequest { report.supportRequest = request }
                    report.reviews += page.reviews.count
                }
                report.pages += 1
                bytes = page.changes.reduce(bytes) {
                    $0.addingReportingOverflow(($1.fields?.count ?? 0) + $1.type.utf8.count + 32).partialValue
                }
                // When what remains is no more than the pages fetched ahead, the key indexes are
                // built now, while those pages are fetched and read, not after them (a core would
                // idle meanwhile); the last pages' records then go into the indexes as they are
                // written. (The server's count only times this: the indexes are built either way.)
                if keysDropped, page.more, let remaining = page.remaining, remaining <= FeedPrefetch.defaultDepth * pageSize,
                    (try? database.transaction(.normal, { try store.ensureRecordKeyIndexes() })) != nil
                {
                    keysDropped = false
                }
                context.observers.emit(
                    .pullProgress(records: report.upserted + report.deleted, bytes: bytes, remaining: page.more ? page.remaining : 0))
                if !page.more {
                    report.caughtUp = true
                    return report
                }
                if let bound = limits.reached(pages: report.pages, bytes: bytes, elapsed: started.duration(to: clock.now)) {
                    report.stoppedBecause = .failed(
                        reason: "the pull stopped at its bound of \(bound); the next pull goes on from here", retryAfter: nil)
                    return report
                }
            case .authExpired:
                refreshed += 1
                guard refreshed <= context.maxAuthRefreshes, await context.refreshAuthentication() else {
                    report.stoppedBecause = outcome
                    return report
                }
                // The same page again, under the new token.
                prefetch?.cancel()
                prefetch = nil
            case .cursorExpired:
                // The server lost the history this cursor points into: start over, and swap
                // the whole store only when the first page of the new history commits.
                guard !fromScratch, cursor != nil else {
                    report.stoppedBecause = outcome
                    return report
                }
                cursor = nil
                fromScratch = true
                prefetch?.cancel()
                prefetch = nil
            case .unreachable(let reason):
                await context.networkDown(reason)
                report.stoppedBecause = outcome
                return report
            case .failed:
                report.stoppedBecause = outcome
                return report
            }
        }
        return report
    }

    /// Runs `body` in one transaction and announces the records it changed once it commits.
    func writeAnnouncing(_ body: () throws -> Void) throws {
        _ = takeNotices()
        do {
            try database.transaction(.normal, body)
        } catch {
            _ = takeNotices()
            throw error
        }
        announce(takeNotices())
    }

    /// One page of the feed, each record read by its type off the database's thread.
    struct FetchedPage: Sendable {
        /// Each change's key columns, in the page's order (none for a deletion).
        var keys: [[String?]] = []
        /// Whether each change's type comes only by subscription.
        var subscribed: [Bool] = []
        /// Why a record of the page cannot be read by this build, when one cannot.
        var unreadable: String?
    }

    /// The most changes the first page of a pull asks for.
    static let firstPageSize = 1000

    /// A page fetched and its records read by their types (nil for an outcome without a page).
    struct ReadOutcome: Sendable {
        var outcome: PullOutcome
        var fetched: FetchedPage?
    }

    /// Fetches the page after `cursor`.
    nonisolated static func fetchOutcome(
        transport: any OutboxTransport, cursor: String?, limit: Int, principal: String?, wait: Duration = .zero,
        subscription: SubscriptionQuery? = nil
    ) async -> PullOutcome {
        if let subscription {
            return await transport.fetchChanges(cursor: cursor, limit: limit, as: principal, subscription: subscription)
        } else if wait > .zero {
            return await transport.fetchChanges(cursor: cursor, limit: limit, as: principal, waitingUpTo: wait)
        } else {
            return await transport.fetchChanges(cursor: cursor, limit: limit, as: principal)
        }
    }

    /// Reads every record of `page` by its type, on the caller's task (not the database's thread).
    nonisolated static func readPage(_ page: ChangePage, recordTypes: RecordRegistry) async -> FetchedPage {
        var fetched = FetchedPage()
        fetched.keys.reserveCapacity(page.changes.count)
        fetched.subscribed.reserveCapacity(page.changes.count)
        for change in page.changes {
            let entry = recordTypes[change.type]
            fetched.subscribed.append(entry?.subscriptionFields.isEmpty == false)
            guard let fields = change.fields else {
                fetched.keys.append([])
                continue
            }
            do {
                if let entry {
                    fetched.keys.append(OutboxStore.recordKeys(try entry.indexEntries(fields), fields: entry.indexedFields))
                } else {
                    _ = try JSONSerialization.jsonObject(with: fields)
                    fetched.keys.append([])
                }
            } catch {
                fetched.unreadable = "the feed holds \(change.type) \(change.id), which this build cannot read: \(error)"
                return fetched
            }
        }
        return fetched
    }
}

/// How far one `Outbox.pull()` may go before it stops (and the next one goes on): a feed that
/// never ends, by mistake or by malice, costs the device a bounded amount of work.
public struct PullLimits: Sendable, Equatable {
    /// Pages at most (10,000: five million records at the largest page).
    public var maxPages: Int
    /// Bytes of records at most (1 GiB).
    public var maxBytes: Int
    /// Time at most, measured on a monotonic clock (10 minutes).
    public var maxDuration: Duration

    public init(maxPages: Int = 10_000, maxBytes: Int = 1 << 30, maxDuration: Duration = .seconds(600)) {
        self.maxPages = max(1, maxPages)
        self.maxBytes = max(1, maxBytes)
        self.maxDuration = maxDuration
    }

    /// The bound reached, in words, or nil.
    func reached(pages: Int, bytes: Int, elapsed: Duration) -> String? {
        if pages >= maxPages { return "\(maxPages) pages" }
        if bytes >= maxBytes { return "\(maxBytes) bytes" }
        if elapsed >= maxDuration { return "\(maxDuration)" }
        return nil
    }
}
