import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

/// The change feed (`GET /changes?cursor=…&limit=…`, docs/PROTOCOL.md, "Records and the change
/// feed"): the changes of records in the caller's scope after its cursor, a page at a time, in
/// commit order.
struct ChangeFeed: ServerPart {
    let context: ServerContext

    /// `GET /changes?cursor=…&limit=…[&subscription=…]`: the changes in the principal's scope
    /// after the cursor, of the types devices receive without subscribing or of one subscription.
    /// A request that accepts `CompactFeedPage.mediaType` is answered with a compact page (of up
    /// to 10,000 changes); any other, and every page `json` asks for, with JSON.
    func changes(_ request: HTTPRequest, json: Bool = false) -> HTTPResponse {
        let compact = !json && Self.acceptsCompact(request.header("Accept"))
        let maxLimit = compact ? CompactFeedPage.maxChanges : SyncServer.maxChangesPerPage
        let caller: Caller
        switch self.caller(of: request) {
        case .allowed(let found): caller = found
        case .refused(let refusal): return refusal
        }
        var parameters: [String: String] = [:]
        for pair in (request.query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, parameters[parts[0]] == nil, let value = parts[1].removingPercentEncoding else {
                return .problem(.badQuery, detail: "the query takes cursor=, limit=, wait= and subscription= once each")
            }
            parameters[parts[0]] = value
        }
        if let wait = parameters["wait"], Self.waitSeconds(wait) == nil {
            return .problem(.badQuery, detail: "wait is a whole number of seconds (above the server's longest wait it is served as that)")
        }
        var limit = 500
        if let text = parameters["limit"] {
            // Digits only; a number past Int's range is as far above 1,000 as any other.
            guard !text.isEmpty, text.utf8.allSatisfy({ (48...57).contains($0) }), (Int(text) ?? Int.max) >= 1 else {
                return .problem(
                    .badLimit,
                    detail:
                        "limit is a whole number from 1 (above \(maxLimit) it is served as \(maxLimit))"
                )
            }
            let value = Int(text) ?? Int.max
            limit = min(value, maxLimit)
        }
        var after: (changes: Int64, reviews: Int64) = (0, 0)
        var counted: WireSyntax.FeedCount?
        if let cursor = parameters["cursor"], !cursor.isEmpty {
            guard let position = WireSyntax.parseCursor(cursor) else {
                return .problem(.badCursor, detail: "the cursor is not one this server issued")
            }
            after = (position.changes, position.reviews)
            counted = position.count
        }
        // A device's own feed leaves out the types it receives only by subscription; the back
        // office's holds every type.
        var selection: FeedSelection = caller.feedPrincipal == nil ? .all : .excluding(recordTypes.subscribedTypes)
        if let json = parameters[SubscriptionQuery.parameter] {
            switch SubscriptionMatch.checking(json, against: recordTypes) {
            case .first(let match): selection = .subscription(match, outsideToo: after.changes > 0)
            case .second(let reason): return .problem(.badSubscription, detail: reason)
            }
        }
        let response = locked {
            page(
                workspace: caller.workspace, principal: caller.feedPrincipal, device: caller.device, selection: selection, after: after,
                counted: counted, limit: limit, compact: compact)
        }
        let (hook, pages) = settings.countFeedPage()
        hook?(pages)
        return response
    }

    /// Whether an `Accept` header names the compact page (with a weight above zero): a list
    /// of media ranges, parameters after `;`.
    static func acceptsCompact(_ accept: String?) -> Bool {
        guard let accept, accept.utf8.count <= 1024 else { return false }
        for range in accept.split(separator: ",") {
            let parts = range.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard parts.first == CompactFeedPage.mediaType else { continue }
            return !parts.dropFirst().contains { $0.hasPrefix("q=") && Double($0.dropFirst(2)) == 0 }
        }
        return false
    }

    /// `wait=`'s seconds: digits only, at most nine of them; nil for anything else.
    static func waitSeconds(_ text: String) -> Int? {
        guard (1...9).contains(text.utf8.count), text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int(text)
    }

    /// The workspace of a `GET /changes` whose page is empty now (no change, review or support
    /// request past its cursor), so that it may wait; nil when it is to be answered at once
    /// (something to send, or a refusal).
    func emptyPageWorkspace(_ request: HTTPRequest) -> String? {
        guard case .allowed(let caller) = self.caller(of: request) else { return nil }
        let response = changes(request, json: true)
        guard response.status == 200, let page = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any],
            (page[FeedPage.changes] as? [Any])?.isEmpty == true, page[FeedPage.reviews] == nil, page[FeedPage.supportRequest] == nil,
            page[FeedPage.more] as? Bool == false
        else { return nil }
        return caller.workspace
    }

    /// For a device's own feed (no `subscription`) in a workspace with types that come by
    /// subscription: the feed's end now, from which `hasSubscribedChange` looks; nil otherwise.
    func subscribedChangesMark(_ request: HTTPRequest) -> Int64? {
        guard !recordTypes.subscribedTypes.isEmpty, !(request.query ?? "").contains(SubscriptionQuery.parameter + "="),
            case .allowed(let caller) = self.caller(of: request), caller.feedPrincipal != nil
        else { return nil }
        return try? locked { try store.lastChange() }
    }

    /// Whether a record of a type that comes by subscription, in the caller's scope, changed
    /// after `mark`.
    func hasSubscribedChange(_ request: HTTPRequest, after mark: Int64) -> Bool {
        guard case .allowed(let caller) = self.caller(of: request), let principal = caller.feedPrincipal else { return false }
        let types = recordTypes.subscribedTypes
        let found = try? locked {
            try store.feedRemaining(workspace: caller.workspace, principal: principal, selection: .only(types), after: mark, cap: 1)
        }
        return (found ?? 0) > 0
    }

    /// The most a page's `remaining` counts.
    static let maxRemaining = 1_000_000

    /// The most reviews one page carries.
    static let maxReviewsPerPage = 100

    /// How many changes follow a page of a long pull, and what its cursor keeps of that count.
    /// Counted once (up to `maxRemaining`) when the cursor carries no count; then carried from
    /// page to page, less what each page brought, plus what was numbered past the counted end
    /// since: a pull of N changes counts them once, not once per page. (A record written again
    /// meanwhile may be counted twice: the figure is for progress, not for bookkeeping.) `top`:
    /// the feed's end as this request first read it, past which no cursor's count can be.
    private func remaining(
        workspace: String, principal: String?, selection: FeedSelection, after last: Int64, brought entries: ArraySlice<FeedEntry>,
        counted: WireSyntax.FeedCount?, top: Int64
    ) throws -> (changes: Int, count: WireSyntax.FeedCount) {
        let cap = Int64(Self.maxRemaining)
        if let counted, counted.top <= top, (0...cap).contains(counted.below) {
            let below = max(0, counted.below - Int64(entries.count { $0.seq <= counted.top }))
            let newer = try store.feedRemaining(
                workspace: workspace, principal: principal, selection: selection, after: max(counted.top, last), cap: Self.maxRemaining)
            return (Int(min(cap, below + Int64(newer))), WireSyntax.FeedCount(top: counted.top, below: below))
        }
        // (Read now: the page's read numbered what was waiting.)
        let end = try store.highestChangePosition()
        let changes = try store.feedRemaining(
            workspace: workspace, principal: principal, selection: selection, after: last, cap: Self.maxRemaining)
        return (changes, WireSyntax.FeedCount(top: max(end, last), below: Int64(changes)))
    }

    /// One page of the feed, with the reviews of `principal`'s documents since the cursor and
    /// the support request open for `device` if there is one; runs under the lock.
    private func page(
        workspace: String, principal: String?, device: String?, selection: FeedSelection, after: (changes: Int64, reviews: Int64),
        counted: WireSyntax.FeedCount?, limit: Int, compact: Bool
    ) -> HTTPResponse {
        // A subscription's page holds its records only: reviews and support requests come with
        // the device's own feed.
        var subscribed = false
        if case .subscription = selection { subscribed = true }
        do {
            // (A cursor that passed no review needs no look at the reviews' end.)
            let reviewsEnd = after.reviews == 0 ? 0 : try store.history.lastSubmissionEvent()
            let top = try store.highestChangePosition()
            guard after.changes <= top, after.reviews <= reviewsEnd else {
                return .problem(
                    .cursorExpired, detail: "the cursor is ahead of this server's feed (its data was reset); pull again from the start")
            }
            let page = try store.feed(
                workspace: workspace, principal: principal, selection: selection, after: after.changes, limit: limit + 1)
            var reviews: [StoredDocumentEvent] = []
            if let principal, !subscribed {
                reviews = try store.history.reviews(
                    workspace: workspace, principal: principal, after: after.reviews, limit: Self.maxReviewsPerPage + 1)
            }
            var entries = page.prefix(limit)
            if compact {
                // A compact page stops after the change that takes its records past its bound.
                var bytes = 0
                for (index, entry) in zip(entries.indices, entries) {
                    bytes += entry.payload?.count ?? 0
                    if bytes > CompactFeedPage.maxRecordBytes {
                        entries = entries[...index]
                        break
                    }
                }
            }
            let more = page.count > entries.count || reviews.count > Self.maxReviewsPerPage
            reviews = Array(reviews.prefix(Self.maxReviewsPerPage))
            let last = entries.last?.seq ?? after.changes
            let remaining =
                more
                ? try remaining(
                    workspace: workspace, principal: principal, selection: selection, after: last, brought: entries, counted: counted,
                    top: top) : nil
            // The page's members but its changes, written once for either form.
            var body = Data(",\"\(FeedPage.cursor)\":".utf8)
            body.append(
                WireSyntax.jsonBytes(WireSyntax.cursor(last, reviews: reviews.last?.seq ?? after.reviews, count: remaining?.count)))
            body.append(contentsOf: ",\"\(FeedPage.more)\":\(more)".utf8)
            if let remaining { body.append(contentsOf: ",\"\(FeedPage.remaining)\":\(remaining.changes)".utf8) }
            if !reviews.isEmpty {
                body.append(contentsOf: ",\"\(FeedPage.reviews)\":".utf8)
                body.append(DeviceService.json(reviews.compactMap(HistoryService.review)))
            }
            if let device, !subscribed, let request = try store.support.openSupportRequest(workspace: workspace, device: device) {
                body.append(contentsOf: ",\"\(FeedPage.supportRequest)\":".utf8)
                body.append(DeviceService.json(SupportService.summary(request)))
            }
            body.append(0x7D)
            if compact {
                var writer = CompactFeedPage.Writer(
                    envelope: Data("{\"\(FeedPage.changes)\":[]".utf8) + body, count: entries.count,
                    capacity: entries.reduce(0) { $0 + ($1.payload?.count ?? 0) + $1.type.utf8.count + 20 })
                for entry in entries {
                    writer.append(kind: entry.kind, type: entry.type, id: entry.id, version: entry.version, record: entry.payload)
                }
                return HTTPResponse(status: 200, headers: [("Content-Type", CompactFeedPage.mediaType)], body: writer.body)
            }
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Self.jsonPage(entries, members: body))
        } catch {
            return failure(error, "feed error")
        }
    }

    /// A JSON page: its changes, then `members` (the rest of the page, from its first comma to
    /// its closing brace). Written by hand around the stored bytes: records are stored as
    /// canonical JSON, so a page costs no parsing and no re-encoding of them.
    private static func jsonPage(_ entries: ArraySlice<FeedEntry>, members: Data) -> Data {
        var body = Data("{\"\(FeedPage.changes)\":[".utf8)
        for (offset, entry) in entries.enumerated() {
            if offset > 0 { body.append(0x2C) }
            body.append(contentsOf: "{\"\(FeedPage.Change.id)\":\(entry.id),\"\(FeedPage.Change.type)\":".utf8)
            body.append(WireSyntax.jsonBytes(entry.type))
            switch entry.kind {
            case .outside:
                body.append(contentsOf: ",\"\(FeedPage.Change.outside)\":true}".utf8)
            case .state:
                body.append(contentsOf: ",\"\(FeedPage.Change.version)\":\(entry.version),\"\(FeedPage.Change.record)\":".utf8)
                body.append(entry.payload ?? Data())
                body.append(0x7D)
            case .deleted:
                body.append(contentsOf: ",\"\(FeedPage.Change.deleted)\":true}".utf8)
            }
        }
        body.append(0x5D)
        body.append(members)
        return body
    }
}

extension FeedEntry {
    /// What the entry says of its record, in either form of a page: its latest state (with its
    /// fields), its removal from the scope, or its leaving a subscription.
    fileprivate var kind: CompactFeedPage.Kind {
        if deleted { return .deleted }
        if outside { return .outside }
        return payload == nil ? .deleted : .state
    }
}
